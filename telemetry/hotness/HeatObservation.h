#pragma once
/// \file
/// Gathering a process's region heat (HeatRegions.h) from a hotness source, live or from a
/// recorded trace, and writing the scored regions out: the loop and the scoring output of
/// `tierctl hotness` (tierd/cli/HotnessCommand.cpp), which the rig's `hotness` scenario runs.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <ostream>

#include "telemetry/hotness/HeatRegions.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/hotness/Trace.h"
#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// How often observeHeat() drains its source, nanoseconds.
inline constexpr uint64_t kObservePollNs = 100'000'000;

/// Adds the samples of `pid` that a started `source` yields over `seconds` to `heat`: drains it
/// every kObservePollNs on the monotonic clock, the last drain at or after the end, counting
/// samples as the source's weightKind() says (Weighted, DAMON: by their nr_accesses; addSamples).
/// Stops the source in every case; `stats` gets its statistics after a successful run. A set
/// `*stop` (a signal handler's) ends the observation after the next drain.
/// Errors: the first failed drain (as the source gave it).
Status observeHeat(HotnessSource& source, pid_t pid, uint64_t seconds, RegionHeatMap& heat,
                   SourceStats& stats, const std::atomic<bool>* stop = nullptr);

/// Adds the samples of `pid` in a recorded trace to `heat` (all of it at once, weighted as its
/// header's source would be live: weightKindOf(header.source)) and returns the replay's
/// statistics.
SourceStats replayHeat(Trace trace, pid_t pid, RegionHeatMap& heat);

/// Writes one line per region of `heat`, hottest first (ties in address order): its 2 MiB start
/// in hex, heat, whether the truth covers it and whether `score` called it hot (1 or 0), after a
/// '#' header line naming the hot threshold. The stream's state tells whether writing worked.
void writeHeatRanking(std::ostream& out, const RegionHeatMap& heat, const HotSetTruth& truth,
                      const HotSetScore& score);

}  // namespace tierd::telemetry

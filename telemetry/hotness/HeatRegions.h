#pragma once
/// \file
/// Per-2 MiB heat (DESIGN.md principle 3: the unit of hotness is the 2 MiB region) and scoring a
/// detected hot set against ground truth (tierd-gups writes its hot set to a file).
/// Scoring ranks regions by heat and calls the top K hot, K = the number of truth regions: ranking
/// against capacity separates hot from cold where fixed thresholds fail with huge pages
/// (REFERENCE.md section 5: cold 2 MiB pages still look accessed in ~73% of DAMON checks).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/core/Units.h"

namespace tierd::telemetry {

/// The heat unit: 2 MiB, aligned.
inline constexpr uint64_t kHeatRegionBytes = 2 * kMiB;

/// Heat of a process's regions: 2 MiB-aligned start address -> summed sample weight.
using RegionHeatMap = std::map<uint64_t, uint64_t>;

/// Adds each sample of `pid` (all pids when 0) to its 2 MiB region: 1 per sample for sampled
/// sources (counts accesses; latency weights would favour slow memory, not hot memory), or the
/// sample's weight when `useWeight` (DAMON samples carry nr_accesses as weight).
void addSamples(RegionHeatMap& heat, const std::vector<AccessSample>& samples, pid_t pid = 0,
                bool useWeight = false);

/// Ground truth: a process and its hot address ranges [start, end).
struct HotSetTruth {
  pid_t pid = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

/// Parses a hot-set file: a line "pid N", then one "start-end" per line in hex (with or without
/// 0x), as tierd-gups writes it. '#' starts a comment. Errors name `context`:line.
Result<HotSetTruth> parseHotSet(std::string_view text, const std::string& context);

/// The 2 MiB regions (aligned starts) fully or partly covered by the truth ranges.
std::vector<uint64_t> truthRegions(const HotSetTruth& truth);

/// Precision and recall of the predicted hot regions.
struct HotSetScore {
  size_t actual = 0;     ///< regions in the truth
  size_t predicted = 0;  ///< regions called hot (top K by heat, K = actual; only heat > 0)
  size_t truePositive = 0;
  double precision = 0;  ///< truePositive / predicted (0 when nothing predicted)
  double recall = 0;     ///< truePositive / actual
};

/// Scores `heat` against `truth` (see the file comment). Ties in heat break by lower address.
HotSetScore scoreHotSet(const RegionHeatMap& heat, const HotSetTruth& truth);

}  // namespace tierd::telemetry

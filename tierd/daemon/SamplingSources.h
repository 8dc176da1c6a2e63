#pragma once
/// \file
/// SamplingSources: the hotness source of each tracked process (telemetry::HotnessSource) through
/// its life: built by the SourceFactory and started when the process enters its scope, retried
/// with a doubling back-off after a failure, drained into the heat model each tick, told whether
/// placement is settled, paused over a settled wait (sampling.settled_damon_window) and resumed,
/// stopped when the process leaves. Owned and called by one thread (the engine's). Depends on
/// tierd_telemetry and tierd_policy (HeatModel).

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "policy/HeatModel.h"
#include "telemetry/hotness/HotnessSource.h"
#include "tierd/core/Result.h"
#include "tierd/daemon/TickReport.h"

namespace tierd::daemon {

/// Builds the hotness source for one process of a workload (not started). Returning an error
/// means "no sampling for this process for now"; the engine counts it, goes on, and tries again
/// after kSourceRetryMinNs, doubling the wait per failure up to kSourceRetryMaxNs. Returning a
/// null source means the factory chose not to sample the process.
inline constexpr uint64_t kSourceRetryMinNs = 1'000'000'000;   ///< first retry after 1 s
inline constexpr uint64_t kSourceRetryMaxNs = 64'000'000'000;  ///< retries at least every 64 s
using SourceFactory = std::function<Result<std::unique_ptr<telemetry::HotnessSource>>(
    pid_t pid, const std::string& workload)>;

/// The sources of the tracked processes, by pid.
class SamplingSources {
 public:
  /// `factory` may be empty: every start then fails ("no hotness source configured").
  explicit SamplingSources(SourceFactory factory);

  /// Builds and starts the source of `pid`, a process of workload `workload` (a name) that has
  /// none yet, at `nowNs`. A failure is counted (EngineTotals::sourceErrors), said in
  /// report.problems ("pid P: sampling: ... (retried in N s)") and retried after the back-off.
  void start(pid_t pid, const std::string& workload, uint64_t nowNs, TickReport& report,
             EngineTotals& totals);
  /// Tries again the failed sources whose back-off ended by `nowNs`, in pid order
  /// (EngineTotals::sourceRetries), as start() does.
  void retryDue(uint64_t nowNs, TickReport& report, EngineTotals& totals);
  /// Stops `pid`'s source, if any, and forgets the process.
  void drop(pid_t pid);
  /// Stops every source (and so removes tierd's kdamonds). Idempotent.
  void stopAll();

  /// Drains every source at `nowNs` and ingests its samples of its own pid into `heat` (weighted
  /// sources' rates covering `span`), in pid order, then decays `heat` to `nowNs`. Fills
  /// report.samples and report.sourceStates (HotnessSource::state, regions and heat still zero)
  /// and EngineTotals::samples; a failed drain is counted in sourceErrors and said in
  /// report.problems.
  void drain(uint64_t nowNs, policy::TickSpan span, policy::HeatModel& heat, TickReport& report,
             EngineTotals& totals);
  /// Between ticks: every source moves what its kernel buffer holds into its own queue
  /// (HotnessSource::collect) for the next drain(). A source's first failure since the last
  /// drain is kept and reported by that drain as a failed drain is ("pid N: collect: ...").
  void collect();
  /// Tells every source whether placement is settled (HotnessSource::setSettled).
  void setSettled(bool settled);

  /// Engine::pauseSampling with the window `windowNs` (sampling.settled_damon_window, ns): pauses
  /// every source that can pause when the lead (the longest of the window and the sources'
  /// HotnessSource::pauseLeadNs) is shorter than `waitNs`; returns that lead, 0 when nothing was
  /// paused. "cannot pause" is said in `problems` once per process, a failed pause each time.
  uint64_t pause(uint64_t nowNs, uint64_t waitNs, uint64_t windowNs,
                 std::vector<std::string>& problems);
  /// Resumes every source pause() paused, adding the time each was paused to
  /// EngineTotals::samplingPausedNs; failures are said in `problems`. Idempotent.
  void resume(uint64_t nowNs, std::vector<std::string>& problems, EngineTotals& totals);

  /// `pid`'s running source, nullptr when it has none.
  const telemetry::HotnessSource* sourceOf(pid_t pid) const;
  /// Samples of `pid` ingested since it entered its scope (0 for a pid not known).
  uint64_t samplesOf(pid_t pid) const;
  /// The running sources by pid, ascending.
  std::vector<std::pair<pid_t, const telemetry::HotnessSource*>> running() const;

 private:
  struct Slot {
    std::string workload;  ///< the workload's name (what the factory is given)
    std::unique_ptr<telemetry::HotnessSource> source;
    bool failed = false;
    bool paused = false;       ///< pause() paused its source, not yet resumed
    bool pauseWarned = false;  ///< "cannot pause" was said for it
    uint64_t samples = 0;      ///< samples of this process ingested since it entered
    std::string collectError;  ///< collect()'s first failure since the last drain(), "" if none
    uint64_t backoffNs = 0;    ///< wait before the next attempt (doubles per failure)
    uint64_t retryAtNs = 0;    ///< when a failed source is tried again
  };
  /// Builds and starts `slot`'s source (start() and retryDue()).
  void startSlot(pid_t pid, Slot& slot, uint64_t nowNs, TickReport& report, EngineTotals& totals);

  SourceFactory factory_;
  std::map<pid_t, Slot> slots_;
  uint64_t pausedAtNs_ = 0;  ///< when pause() last paused a source
};

}  // namespace tierd::daemon

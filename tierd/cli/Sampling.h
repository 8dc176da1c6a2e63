#pragma once
/// \file
/// Shared by the sampling, record and hotness subcommands: starting the best available hotness
/// source with the reasons for skipping the others.

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/SamplingProbe.h"

namespace tierd::cli {

/// A started source and the event names it uses.
struct StartedSource {
  std::unique_ptr<telemetry::HotnessSource> source;
  std::vector<std::string> events;
};

/// Starts the first available source of `probe` (or only `only`, when not empty) for `target`,
/// logging each one skipped or failed to `log`. DAMON is skipped for a cgroup target. Errors
/// (Environment) when none starts. DAMON gets `damon`'s monitoring attributes, the perf sources
/// `perf`'s sample period and CPU budget.
Result<StartedSource> startBestSource(const telemetry::SamplingProbe& probe,
                                      const telemetry::SamplingTarget& target,
                                      const std::string& only, telemetry::PerfEventOpener& opener,
                                      telemetry::DamonFs& fs, const sys::SysRoot& root,
                                      std::ostream& log, const telemetry::DamonConfig& damon = {},
                                      telemetry::DamonPool* damonPool = nullptr,
                                      const telemetry::PerfTuning& perf = {});

/// The one-kdamond pool of a tierctl command that samples with DAMON: its ownership is recorded
/// where the daemon's is (/run/tierd/damon.owner under `root`, DamonPool.h), so that a tierctl
/// killed by SIGKILL leaves kdamonds the next tierd reclaims.
telemetry::DamonPoolConfig tierctlDamonPool(const sys::SysRoot& root);

/// While one exists, SIGINT and SIGTERM set stopRequested() instead of ending the process
/// (handlers installed without SA_RESTART, so a sleep ends early), so that the command stops its
/// source (its kdamond off and removed) before it exits. The previous handlers come back when
/// it is destroyed. One at a time.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  /// Set by SIGINT or SIGTERM since construction.
  static const std::atomic<bool>& stopRequested();
};

/// The JSON form of a probe (`tierctl sampling --probe --json`).
nlohmann::json samplingProbeToJson(const telemetry::SamplingProbe& p);

}  // namespace tierd::cli

#pragma once
/// \file
/// DaemonMetrics: turns what the daemon loop sees (TickReport, the hotness sources' counters,
/// EngineTotals, /proc/vmstat, reloads, probes) into the catalog's metrics on a MetricsSink.
/// Called by the daemon's main loop thread only; tests drive it with a RecordingSink.
///
/// At start every counter series tierd will update is added 0 (and the call-latency histogram
/// declared with no observation), so every family is on the first scrape and rate() has a
/// baseline. The copy-throughput and CPU-per-GiB gauges stay absent until pages moved: a 0
/// there would read as a measurement. Counters the loop derives from cumulative totals (source
/// samples, engine error counts, the heat model's ping-pong holds) are exported as deltas.
///
/// Where the numbers come from:
/// - tierd_daemon_cpu_seconds_total: TickReport::cpu (thread CPU clock around each engine phase:
///   topology = the topology read, scope = the rest of topologyScopeNs, migrate = locate +
///   execute, sampler = draining and ingest, policy = snapshot and arbiter) plus what the loop
///   measures itself for `metrics` (this class, vmstat) and `main` (the rest).
/// - tierd_sampler_*: HotnessSource::stats() per process, summed per source label; overhead is
///   the tick's sampler-phase CPU per wall second since the previous tick; period from
///   PerfSampler::period(), interval the DAMON sampling interval tierd configures.
/// - tierd_hotness_*_bytes, tierd_workload_memory_bytes: TickReport::workloads (located bytes of
///   the managed mappings: private anonymous memory and hugetlb).
/// - migration: MigrationMeter::recordBatch (per batch, see there), endTick each tick.
/// - tierd_arbiter_pingpong_moves_total: HeatModel::recordStats().pingPongHeld increase. The
///   model does not say which direction it holds; a region held right after a promotion is next
///   refused a demotion and vice versa, so the increase is labelled with the opposite of the
///   direction that moved most bytes this tick.
/// - tierd_daemon_errors_total: EngineTotals increases (sourceErrors -> sampler, scopeErrors ->
///   scope, locateErrors -> migrate) with errno "other" (the engine keeps no errno for them), and
///   the migrator's errno counts.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/Config.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/metrics/MetricsSink.h"
#include "telemetry/metrics/MigrationMeter.h"
#include "tierd/daemon/Engine.h"

namespace tierd::daemon {

/// The `source` label of a hotness source name: perf-pebs -> pebs, perf-ibs -> ibs,
/// perf-sw-page-faults -> perf_software, damon-vaddr -> damon, replay -> replay; "" otherwise.
std::string sourceLabel(const std::string& sourceName);

/// One running hotness source as the loop sees it after a tick.
struct SourceSnapshot {
  pid_t pid = 0;
  std::string name;                   ///< HotnessSource::name()
  telemetry::SourceStats stats;       ///< totals since the source started
  std::optional<uint64_t> period;     ///< perf sample period in force (events), perf sources only
  std::optional<double> intervalSec;  ///< sampling interval (s), interval-driven sources only
};

/// Reads the snapshots of the engine's running sources (PerfSampler period, DAMON interval).
std::vector<SourceSnapshot> snapshotSources(const Engine& engine);

class DaemonMetrics {
 public:
  explicit DaemonMetrics(telemetry::MetricsSink& sink) : sink_(sink) {}

  /// Start of the daemon: workload labels from `config`, every counter series at 0.
  /// `pageSizes` are the page sizes tierd may move (base page, PMD THP size) in bytes;
  /// `sourceName` is the chosen hotness source ("" when none).
  void start(const policy::CompiledConfig& config, const std::vector<uint64_t>& pageSizes,
             const std::string& sourceName);

  /// After a successful reload: the new workload names (their counter series at 0).
  void setWorkloads(const policy::CompiledConfig& config);

  /// A SIGHUP reload finished (`ok` false: the old config stays).
  void configReload(bool ok);

  /// A capability flag tierd probes itself (perf_pebs, perf_ibs, perf_software, move_pages).
  void capability(const std::string& name, bool available);

  /// One tick's report. `wallSeconds` since the previous tick (for the sampler overhead);
  /// `workloadOf` names a pid's workload for the migrated-bytes counter.
  void tick(const TickReport& report, const std::vector<SourceSnapshot>& sources,
            double wallSeconds, const std::function<std::string(pid_t)>& workloadOf);

  /// Cumulative engine and heat-model counters after a tick (exported as increases).
  void totals(const EngineTotals& totals, uint64_t pingPongHeldTotal, const TickReport* report);

  /// A tick that failed as a whole (the topology could not be read).
  void tickFailed();

  /// A /proc/vmstat reading (kernel migration counters as deltas).
  void vmstat(const std::map<std::string, int64_t>& values);

  /// An error of the metrics plumbing itself (vmstat unreadable...): errors{metrics, errno}.
  void metricsError(int err);

  /// CPU seconds of the loop outside the engine: `component` is "metrics" or "main".
  void loopCpu(const std::string& component, double seconds);

 private:
  void zeroWorkloadCounters(const policy::CompiledConfig& config);

  telemetry::MetricsSink& sink_;
  telemetry::MigrationMeter meter_;
  telemetry::VmstatDeltas vmstat_;
  std::map<pid_t, telemetry::SourceStats> lastSource_;  ///< per pid: totals already exported
  EngineTotals lastTotals_;
  uint64_t lastPingPong_ = 0;
};

}  // namespace tierd::daemon

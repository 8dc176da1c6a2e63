#pragma once
/// \file
/// DaemonMetrics: turns what the daemon loop sees (TickReport, the hotness sources' counters,
/// EngineTotals, /proc/vmstat, reloads, probes) into the catalog's metrics on a MetricsSink.
/// Called by the daemon's main loop thread only; tests drive it with a RecordingSink.
///
/// At start every counter series tierd will update is added 0 (and the call-latency histogram
/// declared with no observation), so every family is on the first scrape and rate() has a
/// baseline. Copy throughput and CPU per GiB are PromQL over counters (docs/metrics.md), so
/// nothing reads as a measurement before pages moved. Counters the loop derives from cumulative
/// totals (source samples, engine error counts, the heat model's ping-pong holds) are exported as
/// deltas.
///
/// Where the numbers come from:
/// - tierd_daemon_cpu_seconds_total: TickReport::cpu (thread CPU clock around each engine phase:
///   topology = the topology read, scope = the rest of topologyScopeNs, migrate = locate +
///   execute, sampler = draining and ingest, policy = snapshot and arbiter) plus what the loop
///   measures itself for `metrics` (this class, vmstat) and `main` (the rest).
/// - tierd_sampler_*: HotnessSource::stats() per process, summed per source label; overhead is
///   the tick's sampler-phase CPU (tierd's thread clock) plus the CPU the kdamonds tierd owns
///   used since the previous tick (/proc/KDAMOND/stat utime + stime), per wall second since the
///   previous tick; period from PerfSampler::period(), interval the DAMON sampling interval tierd
///   configures; open perf events from PerfSampler::openEvents().
/// - tierd_hotness_*_bytes: TickReport::workloads (heat-model regions by the tier they are on).
/// - tierd_workload_memory_bytes: WorkloadReport::memory (the cgroup's memory.numa_stat anon and
///   file bytes per node, else /proc/PID/numa_maps of the workload's processes), labelled with
///   where it came from.
/// - migration: MigrationMeter::recordBatch (per move call, see there).
/// - tierd_arbiter_pingpong_moves_total: policy::PingPongTracker over the moves each tick really
///   made (RangeResult with bytes moved), labelled with the direction of the move that closed the
///   ping-pong; tierd_arbiter_pingpong_holds_total: HeatModel::recordStats().pingPongHeld
///   increase; tierd_arbiter_skipped_candidates_total: TickReport::arbiter per tick.
/// - tierd_daemon_errors_total: EngineTotals increases (sourceErrors -> sampler, scopeErrors ->
///   scope, locateErrors -> migrate) with errno "other" (the engine keeps no errno for them), and
///   the migrator's errno counts.
/// - EngineTotals increases: sourceRetries, pidReuses, identityChecksFailed, thpSplitAfterMove.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/Config.h"
#include "policy/PingPong.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/metrics/MetricsSink.h"
#include "telemetry/metrics/MigrationMeter.h"
#include "tierd/daemon/Engine.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::daemon {

/// The `source` label of a hotness source name (its kSources metricLabel,
/// telemetry/hotness/SourceNames.h: the name itself, e.g. damon-vaddr); "" for a name tierd
/// does not know.
std::string sourceLabel(const std::string& sourceName);

/// One running hotness source as the loop sees it after a tick.
struct SourceSnapshot {
  pid_t pid = 0;
  std::string name;                   ///< HotnessSource::name()
  telemetry::SourceStats stats;       ///< totals since the source started
  std::optional<uint64_t> period;     ///< perf sample period in force (events), perf sources only
  std::optional<double> intervalSec;  ///< sampling interval (s), interval-driven sources only
  std::optional<size_t> openEvents;   ///< perf events (fds, rings) open now, perf sources only
  /// The kernel thread that samples for this source (our kdamond), 0 when none.
  pid_t workerPid = 0;
  /// CPU seconds (utime + stime of /proc/WORKER/stat) the worker has used since it started;
  /// nullopt when there is none or its stat could not be read.
  std::optional<double> workerCpuSeconds;
};

/// CPU seconds (utime + stime, /proc/PID/stat fields 14 and 15) task `pid` has used, read under
/// `root`; clock ticks are sysconf(_SC_CLK_TCK) per second on the live system, 100 under a test
/// root. nullopt when the file cannot be read or parsed (the task is gone).
std::optional<double> taskCpuSeconds(const sys::SysRoot& root, pid_t pid);

/// Reads the snapshots of the engine's running sources (PerfSampler period and open events,
/// DAMON interval and its kdamond's CPU from /proc/KDAMOND/stat under `root`; clock ticks are
/// sysconf(_SC_CLK_TCK) on the live system, 100 under a test root).
std::vector<SourceSnapshot> snapshotSources(const Engine& engine,
                                            const sys::SysRoot& root = sys::SysRoot::live());

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

  /// A capability flag tierd probes itself (perf_pebs, perf_ibs, perf_sw_page_faults, move_pages).
  void capability(const std::string& name, bool available);

  /// One tick's report. `wallSeconds` since the previous tick (for the sampler overhead);
  /// `workloadOf` names a pid's workload for the migrated-bytes counter.
  void tick(const TickReport& report, const std::vector<SourceSnapshot>& sources,
            double wallSeconds, const std::function<std::string(pid_t)>& workloadOf);

  /// Cumulative engine and heat-model counters after a tick (exported as increases).
  void totals(const EngineTotals& totals, uint64_t pingPongHeldTotal);

  /// A tick that failed as a whole (the topology could not be read).
  void tickFailed();

  /// The loop finished a tick (`ok`: the engine's tick succeeded) at `realtimeSeconds`
  /// (CLOCK_REALTIME, seconds since the Unix epoch): tierd_daemon_ticks_total{result} and
  /// tierd_daemon_last_tick_timestamp_seconds.
  void tickDone(bool ok, double realtimeSeconds);

  /// A /proc/vmstat reading (kernel migration counters as deltas).
  void vmstat(const std::map<std::string, int64_t>& values);

  /// A reading of the copy-offload counters (migrateOffloadCounters() of TopologyMetrics.h) as
  /// deltas of tierd_kernel_migrate_offload_events_total; an empty map (no patch 3) exports
  /// nothing.
  void migrateOffload(const std::map<std::string, int64_t>& counters);

  /// An error of the metrics plumbing itself (vmstat unreadable...): errors{metrics, errno}.
  void metricsError(int err);

  /// CPU seconds of the loop outside the engine: `component` is "metrics" or "main".
  void loopCpu(const std::string& component, double seconds);

 private:
  void zeroWorkloadCounters(const policy::CompiledConfig& config);

  telemetry::MetricsSink& sink_;
  telemetry::MigrationMeter meter_;
  telemetry::VmstatDeltas vmstat_;
  telemetry::VmstatDeltas offload_{telemetry::metric::kKernelMigrateOffloadEvents,
                                   telemetry::migrateOffloadCounterNames()};
  std::map<pid_t, telemetry::SourceStats> lastSource_;  ///< per pid: totals already exported
  /// Per sampled pid: its worker (kdamond) pid and CPU seconds already counted.
  std::map<pid_t, std::pair<pid_t, double>> lastWorker_;
  EngineTotals lastTotals_;
  uint64_t lastPingPong_ = 0;
  policy::PingPongTracker pingPong_;
};

}  // namespace tierd::daemon

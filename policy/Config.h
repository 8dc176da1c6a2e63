#pragma once
/// \file
/// The compiled configuration: what tierd runs with after the TOML file (and the profiles it
/// names) passed every check of the compiler (ConfigCompiler.h). A plain immutable value: copy it,
/// compare it, hand a `std::shared_ptr<const CompiledConfig>` to each tick. Every field has a
/// value (defaults come from the schema table, ConfigSchema.h); units are in the field names.

#include <sys/types.h>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tierd::policy {

/// `[sampling] source`: where access samples come from.
enum class SampleSource {
  Auto,    ///< perf when a PMU with memory sampling exists, else DAMON vaddr
  Perf,    ///< perf_event PEBS/IBS sampling
  Damon,   ///< DAMON vaddr monitoring
  Replay,  ///< a recorded trace (`[sampling] trace`)
  /// software page-fault sampling (PERF_COUNT_SW_PAGE_FAULTS), the last resort of auto: sees a
  /// page's first touch, and NUMA hint faults while kernel.numa_balancing is on
  PerfSwPageFaults,
};
/// "auto", "perf", "damon", "replay", "perf-sw-page-faults".
const char* sampleSourceName(SampleSource s);

/// `[migration] page_granularity`: which addresses are passed to move_pages(2).
enum class PageGranularity {
  Huge,  ///< one address per huge page (2 MiB THP, hugetlb page), base pages one by one
  Base,  ///< every base page address, even inside THPs (for kernels where THP moves misbehave)
};
/// "huge", "base".
const char* pageGranularityName(PageGranularity g);

/// A size given either in bytes ("8GiB") or as a percentage of a total ("25%").
struct ByteAmount {
  bool isPercent = false;
  uint64_t bytes = 0;    ///< when !isPercent
  double percent = 0.0;  ///< when isPercent, 0..100
  /// Bytes this amount stands for out of `totalBytes` (percent rounded down); bytes as given.
  uint64_t resolve(uint64_t totalBytes) const;
  bool operator==(const ByteAmount&) const = default;
};

/// `[daemon]`.
struct DaemonConfig {
  uint64_t intervalNs = 0;    ///< tick interval
  std::string metricsListen;  ///< "host:port" of the Prometheus endpoint ("" = disabled)
  /// File with one line "user:password" that /metrics requires as HTTP basic auth ("" = none);
  /// absolute (a relative value is resolved against the config file's directory).
  std::string metricsBasicAuthFile;
  /// metrics_listen may be a non-loopback address without metricsBasicAuthFile
  /// (daemon.metrics_allow_unauthenticated_remote); else the compiler refuses such a config.
  bool metricsAllowUnauthenticatedRemote = false;
  /// The user the metrics exporter process runs as when tierd is root (daemon.metrics_user;
  /// telemetry/metrics/ExporterProcess.h): a user name, never root.
  std::string metricsUser = "nobody";
  /// Path of the control socket tierctl talks to (daemon.control_socket; tierd/daemon/Control.h):
  /// absolute, or "" = none.
  std::string controlSocket;
  bool dryRun = false;  ///< decide and report, move nothing
  /// Least severe log level written (daemon.log_level: "error" .. "debug"; tierd/core/Log.h).
  std::string logLevel = "info";
  /// Longest time between two progress lines of uneventful ticks, ns; 0 = every tick
  /// (daemon.progress_interval).
  uint64_t progressIntervalNs = 0;
  /// Longest reuse of a process's mappings and page locations, ns; 0 = read every tick
  /// (daemon.full_locate_interval; Engine "locate phase").
  uint64_t fullLocateIntervalNs = 0;
  /// Tick interval while placement is settled, ns; 0 = intervalNs always; else >= intervalNs
  /// (daemon.settled_interval; Engine::tick, TickReport::nextIntervalNs).
  uint64_t settledIntervalNs = 0;
  bool operator==(const DaemonConfig&) const = default;
};

/// `[tiers]`: explicit node mapping; both empty = detect (tierd::topology::TierOverride).
struct TiersConfig {
  std::set<int> fastNodes;
  std::set<int> slowNodes;
  bool operator==(const TiersConfig&) const = default;
};

/// `[sampling]`.
struct SamplingConfig {
  SampleSource source = SampleSource::Auto;
  double cpuBudgetPercent = 0.0;  ///< share of one CPU tierd's sampling may use, 0..100
  uint64_t samplePeriod = 0;      ///< events between two samples (perf sample_period)
  std::string trace;              ///< recorded trace file for source = replay, else ""
  int damonMaxProcesses = 16;     ///< kdamonds tierd creates (one per sampled process), 1..64
  bool disableDamonStat = false;  ///< damon_stat = "disable": turn DAMON_STAT off at start
  /// max_sample_interval: longest DAMON sample interval, ns (DamonConfig::maxSampleUs), 1 ms..10 s
  uint64_t maxSampleIntervalNs = 20'000'000;
  /// settled_cpu_budget_percent: the sampling's CPU budget, % of one CPU (0..100), once the
  /// engine judges placement settled (settle_trickle_percent); 0 = none
  /// (DamonConfig::settledCpuBudget).
  double settledCpuBudgetPercent = 0.0;
  /// settled_damon_window: during a settled wait, how long before the next tick DAMON samples
  /// again after a pause, ns (HotnessSource::setPaused; Engine::pauseSampling); 0 = never paused;
  /// else shorter than DaemonConfig::settledIntervalNs.
  uint64_t settledDamonWindowNs = 0;
  /// settle_trickle_percent: the bytes the plans of the last Engine::kSettleTicks ticks moved
  /// or would move, as a % of the workloads' hot bytes this tick (0..100), up to which placement
  /// still counts as settled (Engine::tick, "Settling"); 0 = only plans that move nothing.
  double settleTricklePercent = 2.0;
  bool operator==(const SamplingConfig&) const = default;
};

/// `[migration]`.
struct MigrationConfig {
  PageGranularity pageGranularity = PageGranularity::Huge;
  uint64_t maxPromoteMiBPerS = 0;    ///< MiB/s moved slow -> fast at most (0 = never promote)
  uint64_t maxDemoteMiBPerS = 0;     ///< MiB/s moved fast -> slow at most (0 = never demote)
  uint64_t callLatencyTargetNs = 0;  ///< each move_pages(2) call is sized to take about this long
  ByteAmount fastHeadroom;           ///< free memory kept on the fast tier (bytes or % of it)
  bool allowKernelTiering = false;   ///< move even while the kernel's own tiering runs
  bool operator==(const MigrationConfig&) const = default;
};

/// How a `[[workload]]` selects its processes (exactly one kind).
struct WorkloadSelector {
  enum class Kind { Cgroup, Pids, Command };
  Kind kind = Kind::Cgroup;
  std::string cgroup;       ///< cgroup path relative to the cgroup root, starting with '/'
  std::vector<pid_t> pids;  ///< explicit pids, ascending, no duplicates
  /// Executable: an absolute path, or a file name, matched against /proc/PID/exe (never comm
  /// or argv[0], which any process sets: tierd/scope/Scope.h).
  std::string command;
  std::optional<uint32_t> uid;  ///< only processes with this real uid (/proc/PID/status Uid:)
  bool operator==(const WorkloadSelector&) const = default;
};

/// The per-workload tuning: defaults, overridden by the profile, overridden by the workload.
struct WorkloadPolicy {
  ByteAmount fastQuota;       ///< fast-tier bytes the workload may hold (bytes or % of the tier)
  double hotThreshold = 0.0;  ///< heat (decayed samples) at or above which a region may promote
  /// Promote only at >= hotRatio x the mean heat of the region's own process (PromotionCut,
  /// Policy.h: each process has its own sampler); 0 = off.
  double hotRatio = 0.0;
  /// fill_headroom: the fast tier's free memory that filling leaves (bytes or % of the tier).
  /// While free memory is above it (and above fast_headroom), regions below the hotRatio cut but
  /// at or above hotThreshold are promoted, warmest first, never by an exchange (Policy.h,
  /// WorkloadProposal::fill). Under fast_headroom pressure, the fast-tier regions below the cut
  /// are demoted after the cold ones (WorkloadProposal::warm). 100% (the default): no fill.
  ByteAmount fillHeadroom;
  /// True when fillHeadroom can ever let a region fill (it is not 100% of the tier).
  bool fills() const { return !fillHeadroom.isPercent || fillHeadroom.percent < 100.0; }
  double coldThreshold = 0.0;   ///< heat at or below which a region may demote under pressure
  uint64_t heatHalfLifeNs = 0;  ///< heat halves after this long without samples
  uint64_t cooldownNs = 0;      ///< a region moved waits this long before it moves again
  bool operator==(const WorkloadPolicy&) const = default;
};

/// One `[[workload]]`.
struct WorkloadConfig {
  std::string name;         ///< unique, [A-Za-z0-9_.-]+, used as the metrics label
  std::string profile;      ///< profile name ("" = none)
  std::string profilePath;  ///< the profile file that was read, "" = none
  WorkloadSelector selector;
  WorkloadPolicy policy;
  bool operator==(const WorkloadConfig&) const = default;
};

/// The whole compiled configuration.
struct CompiledConfig {
  std::string sourcePath;  ///< the main file it was compiled from
  DaemonConfig daemon;
  TiersConfig tiers;
  SamplingConfig sampling;
  MigrationConfig migration;
  std::vector<WorkloadConfig> workloads;  ///< in file order
  bool operator==(const CompiledConfig&) const = default;
};

}  // namespace tierd::policy

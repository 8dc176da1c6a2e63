#pragma once
/// \file
/// What the engine reports: one tick's figures (TickReport: per workload, per sampled process,
/// the phases' CPU time, the batch and the arbiter's counters) and the counters since it started
/// (EngineTotals). Filled by Engine::tick and the rooms it sequences; read by the daemon's log
/// lines, metrics (DaemonMetrics) and tierctl status. Plain data.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy/Arbiter.h"
#include "tierd/core/Migration.h"
#include "tierd/core/Types.h"
#include "tierd/sys/Residency.h"
#include "tierd/topology/Topology.h"

namespace tierd::daemon {

/// Resident memory of a workload on one NUMA node, bytes (sys::NodeMemory, Residency.h).
using NodeMemory = sys::NodeMemory;

/// Where WorkloadReport::memory was read from.
enum class MemorySource {
  NumaStat,  ///< the workload's cgroup's memory.numa_stat (v2 bytes; v1 hierarchical_* pages)
  NumaMaps,  ///< /proc/PID/numa_maps of each of the workload's processes, summed (pages present
             ///< per node times kernelpagesize_kB)
};

/// Per-workload figures of one tick (for metrics and the progress view).
struct WorkloadReport {
  std::string name;
  size_t pids = 0;
  uint64_t fastBytes = 0;  ///< located bytes of tracked regions on fast-tier nodes
  uint64_t slowBytes = 0;  ///< located bytes on slow-tier nodes
  /// Bytes of regions at or above the promotion cut (hot_threshold, or hot_ratio x the mean heat:
  /// policy::PromotionCut) on the fast tier.
  uint64_t hotFastBytes = 0;
  uint64_t hotSlowBytes = 0;   ///< ... on the slow tier
  uint64_t coldFastBytes = 0;  ///< bytes of regions at or below cold_threshold on the fast tier
  uint64_t coldSlowBytes = 0;  ///< ... on the slow tier
  /// Resident memory per node: from the cgroup's memory.numa_stat when the workload is selected
  /// by cgroup and the file is readable, else from the processes' /proc/PID/numa_maps
  /// (`memorySource` says which). numa_stat has no hugetlb pages (the hugetlb controller
  /// accounts them); numa_maps counts them as anon.
  std::map<NodeId, NodeMemory> memory;
  MemorySource memorySource = MemorySource::NumaMaps;
  /// Bytes of this tick's plan for the workload (the arbiter's and a restore's ranges), by
  /// direction, whether executed, held or a dry run.
  uint64_t plannedPromoteBytes = 0;
  uint64_t plannedDemoteBytes = 0;
  uint64_t movedBytes = 0;  ///< bytes moved this tick, both directions
  /// Bytes of the arbiter's plan not executed because the operator holds the workload
  /// (OperatorHold: tierctl pause or restore).
  uint64_t heldBytes = 0;
};

/// One sampled process's source and heat at the end of a tick (the progress line prints it, so
/// an SRE can tell a process whose sampler sees no difference between its regions from one whose
/// hot regions wait for the arbiter).
struct SourceState {
  pid_t pid = 0;
  std::string source;   ///< HotnessSource::name(): "damon-vaddr", "perf-pebs", ...
  std::string state;    ///< HotnessSource::state(): "sample_us=500 access=23% regions=412 ..."
  size_t regions = 0;   ///< the process's tracked regions on known nodes (HeatModel)
  double meanHeat = 0;  ///< their mean heat, heat units (HeatModel)
  double maxHeat = 0;   ///< the hottest one's heat
  double cut = 0;       ///< policy::PromotionCut for this process: at or above it a region is hot
  uint64_t hotFastBytes = 0;  ///< bytes of its regions at or above `cut` on the fast tier
  uint64_t hotSlowBytes = 0;  ///< ... on the slow tier (promotion candidates)
};

/// CPU time (this thread, CLOCK_THREAD_CPUTIME_ID) spent in each phase of one tick, ns.
struct PhaseCpu {
  uint64_t topologyScopeNs = 0;  ///< topology and scope refresh, new processes' sources started
  uint64_t locateNs = 0;         ///< smaps and locate() of every scoped process
  uint64_t samplingNs = 0;       ///< draining sources, heat ingest and decay
  uint64_t policyNs = 0;         ///< snapshot and arbiter
  uint64_t migrateNs = 0;        ///< migrator execute and results (user + system time)
  uint64_t topologyNs = 0;       ///< the topology read alone (part of topologyScopeNs)
};

/// What one tick did.
struct TickReport {
  uint64_t nowNs = 0;
  std::string topologyMethod;  ///< how tiers were classified this tick
  std::vector<NodeId> fastNodes, slowNodes;
  std::vector<WorkloadReport> workloads;
  uint64_t samples = 0;              ///< samples ingested this tick
  uint64_t plannedPromoteBytes = 0;  ///< from the arbiter
  uint64_t plannedDemoteBytes = 0;
  uint64_t promotedBytes = 0;  ///< bytes actually moved up this tick
  uint64_t demotedBytes = 0;   ///< bytes actually moved down this tick
  /// THP chunks moved since the last full read (see tick()'s locate phase) that are on their
  /// target but no longer PMD-mapped, counted at this tick's full read: located as
  /// base pages, bounded by how much their VMA's smaps AnonHugePages fell (the kernel split
  /// them, typically for want of a free PMD-order block on the target).
  uint64_t thpSplitAfterMove = 0;
  bool dryRun = false;
  BatchResult batch;                  ///< the migrator's result (empty in dry-run)
  policy::ArbiterStats arbiter;       ///< the arbiter's counters
  std::vector<std::string> problems;  ///< survived problems of this tick (vanished cgroup, ...)
  /// Processes that entered or left a workload's scope this tick, one line each (the daemon
  /// logs them): "workload 'W': pid P in scope (start time S, sampled by SOURCE)" or "(start
  /// time S, not sampled)"; "workload 'W': pid P gone (exited or no longer selected) after N
  /// samples; its heat and plans dropped (G gone so far)", G = EngineTotals::vanishedPids.
  std::vector<std::string> scopeChanges;
  /// The kernel's own tiering running this tick (topology::KernelTieringWatch: numa_balancing, else
  /// a DAMOS scheme: "kdamond 3 runs DAMOS migrate_hot"), "" when none; when not "" and
  /// migration.allow_kernel_tiering is false, nothing was moved (`kernelTieringHeld`).
  std::string kernelTiering;
  bool kernelTieringHeld = false;
  /// Per sampled process with something to say (HotnessSource::state), in pid order.
  std::vector<SourceState> sourceStates;
  PhaseCpu cpu;  ///< where this tick's CPU went
  /// Scoped processes whose mappings, locations and resident memory were reused from an
  /// earlier tick instead of read (Engine::tick, "locate phase"); the rest were read in full.
  size_t locatesReused = 0;
  /// Of those, ranges a move left uncertain (a busy page, reached in part, none present) whose
  /// pages were queried again alone (Migrator::locatePages) instead of a full read.
  size_t rangesRelocated = 0;
  topology::Topology topology;  ///< the snapshot this tick used (for node metrics)
  /// Placement is settled (Engine::tick, "Settling"): the plans of the last
  /// Engine::kSettleTicks ticks, this one included, moved at most
  /// sampling.settle_trickle_percent of the hot bytes; every source was told
  /// HotnessSource::setSettled(true) after planning.
  bool settled = false;
  /// Bytes the plans of the ticks settling looks at (at most Engine::kSettleTicks, this one
  /// included) moved or would move.
  uint64_t settleWindowBytes = 0;
  /// How long the daemon waits before the next tick, ns: daemon.settled_interval when this tick
  /// is `settled` and that key is longer than daemon.interval, else daemon.interval. The next
  /// tick counts a weighted (DAMON) source's rates as covering that many intervals
  /// (policy::TickSpan).
  uint64_t nextIntervalNs = 0;
};

/// Cumulative counters since the engine started.
struct EngineTotals {
  uint64_t ticks = 0;
  uint64_t promotedBytes = 0;
  uint64_t demotedBytes = 0;
  uint64_t samples = 0;
  uint64_t sourceErrors = 0;     ///< sources that failed to build, start or drain
  uint64_t sourceRetries = 0;    ///< attempts to start a source that had failed before
  uint64_t scopeErrors = 0;      ///< workload selectors that failed to resolve
  uint64_t vanishedPids = 0;     ///< processes that left while tracked
  uint64_t locateErrors = 0;     ///< locate() failures (process gone mid-tick, denied)
  uint64_t outOfScopeMoves = 0;  ///< planned moves dropped because the pid left its scope
  /// tracked pids found naming another process (start time changed), whether the new one is in
  /// a scope or not (a `pids` selector stays with the first process it saw)
  uint64_t pidReuses = 0;
  uint64_t identityChecksFailed = 0;  ///< move calls refused: the pid no longer named its process
  /// /proc/PID/status reads that failed (placement unknown that tick: targets ranked by room)
  uint64_t statusErrors = 0;
  uint64_t thpSplitAfterMove = 0;  ///< sum of TickReport::thpSplitAfterMove
  uint64_t locatesReused = 0;      ///< sum of TickReport::locatesReused
  uint64_t rangesRelocated = 0;    ///< sum of TickReport::rangesRelocated
  /// ns hotness sources spent paused in settled waits (Engine::pauseSampling to
  /// resumeSampling), summed over the paused sources
  uint64_t samplingPausedNs = 0;
};

}  // namespace tierd::daemon

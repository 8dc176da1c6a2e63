#pragma once
/// \file
/// Engine: one tick of the tiering loop (docs/architecture.md, "One tick"), wiring the seams
/// together:
///   topology (tierd/topology) and scopes (tierd/scope) refresh -> samples drain
///   (telemetry::HotnessSource per process) -> heat model (policy::HeatModel) -> page locations
///   (Migrator::locate, one query per huge page) -> snapshot (policy::TickContext) -> arbiter
///   (policy::Arbiter) -> migrator (Migrator::execute, bounded by a deadline and the stop flag)
///   -> results back into the model (busy back-off, gone dropped) -> a TickReport for metrics.
/// The engine only sequences these steps; each concern has a room of its own: ScopeTracker,
/// TrackedProcesses, SamplingSources, LocationCache, TaskPlacement, WorkloadFigures, Settling,
/// OperatorRestores (tierd/daemon) and topology::KernelTieringWatch.
///
/// Scope rule: only pids that the ScopeProvider resolved for a configured workload this tick
/// are ever located or moved; a planned range whose pid left its scope is not executed.
/// Identity rule: a process is (pid, start time), held with a pidfd on the live system
/// (scope::ProcessHandle). A pid whose start time changed is a new process: the old one's
/// source, heat and plans are dropped. A `command` workload's process is also held to the
/// executable it matched with (scope::ExecutableId): an exec into another file is a new process
/// image. Before every move_pages call the migrator asks the engine whether the pid still names
/// the process (and, for a `command` workload, the executable) it was planned for.
/// Owned and called by one thread (the daemon's main loop). Time is passed in (CLOCK_MONOTONIC ns).

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/Arbiter.h"
#include "policy/Config.h"
#include "policy/HeatModel.h"
#include "telemetry/hotness/HotnessSource.h"
#include "tierd/core/Migration.h"
#include "tierd/core/Result.h"
#include "tierd/daemon/LocationCache.h"
#include "tierd/daemon/Restores.h"
#include "tierd/daemon/SamplingSources.h"
#include "tierd/daemon/ScopeTracker.h"
#include "tierd/daemon/Settling.h"
#include "tierd/daemon/TaskPlacement.h"
#include "tierd/daemon/TickReport.h"
#include "tierd/daemon/TrackedProcesses.h"
#include "tierd/migrate/Migrator.h"
#include "tierd/migrate/ProcReads.h"
#include "tierd/scope/ProcessIdentity.h"
#include "tierd/scope/Scope.h"
#include "tierd/sys/ProcMaps.h"
#include "tierd/sys/Residency.h"
#include "tierd/sys/SysRoot.h"
#include "tierd/topology/KernelTiering.h"
#include "tierd/topology/Topology.h"
#include "tierd/topology/TopologyProvider.h"

namespace tierd::daemon {

/// See the file comment.
class Engine {
 public:
  /// `migrator` executes and locates; `sources` builds a hotness source per process;
  /// `selfPid` is never in a scope; `mappings` defaults to /proc/PID/smaps under `root`,
  /// `numaMaps` to /proc/PID/numa_maps under `root`, `layout` to /proc/PID/maps under `root`
  /// (the cheap read that tells whether a process's mappings changed: see tick()); `reads` is
  /// where the locate phase puts this tick's smaps and numa_maps reads for the migrator (the
  /// same object the migrator was built with: MovePagesMigrator's `reads`), null: one of the
  /// engine's own that no migrator reads. The topology and
  /// the scopes are read under `root` (topology::SysRootTopologyProvider,
  /// scope::SysRootScopeProvider with `selfPid`) until setTopologyProvider() or setScopeProvider()
  /// says otherwise.
  Engine(const sys::SysRoot& root, std::unique_ptr<migrate::Migrator> migrator,
         SourceFactory sources, pid_t selfPid, std::shared_ptr<const policy::CompiledConfig> config,
         MappingsReader mappings = {}, NumaMapsReader numaMaps = {}, MappingsReader layout = {},
         std::shared_ptr<migrate::ProcReads> reads = {});
  ~Engine();
  Engine(const Engine&) = delete;             ///< holds references into itself (LocationCache)
  Engine& operator=(const Engine&) = delete;  ///< ditto

  /// Replaces where each tick reads the topology (the simulator's modelled machine). Call before
  /// the first tick(); `provider` must not be null.
  void setTopologyProvider(std::unique_ptr<topology::TopologyProvider> provider);
  /// Replaces who resolves the workloads' scopes each tick (the simulator's model). Call before
  /// the first tick() (the provider holds what it pinned, e.g. pid-list entries); `provider` must
  /// not be null. Process identity (/proc/PID/stat) and placement (/proc/PID/status) are still
  /// read under the engine's root.
  void setScopeProvider(std::unique_ptr<scope::ScopeProvider> provider);

  /// Swaps the config at a tick boundary (call between ticks). Workload parameters are
  /// re-applied; workloads whose name or selector changed start afresh (their processes are
  /// dropped as if they had left the scope, and re-admitted by the next tick); the migrator gets
  /// the new config's limits (Migrator::setLimits with migrationLimits(), Tuning.h).
  void setConfig(std::shared_ptr<const policy::CompiledConfig> config);
  const policy::CompiledConfig& config() const { return *config_; }

  /// Runs one tick at `nowNs`. `deadlineNs` (Migrator::nowNs() clock) bounds the migration step,
  /// which still gets at least a quarter of `daemon.interval` from its own start when the
  /// earlier steps ran past `deadlineNs`; `stop` is checked between move_pages calls. Errors only
  /// when the topology cannot be read at all (nothing is moved).
  ///
  /// Locate phase: a process's mappings (smaps), page locations (Migrator::locate) and
  /// resident memory per node (numa_maps) are read in full, and then reused on later ticks
  /// while all of these hold: its /proc/PID/maps (`layout`, no page-table walk) shows the same
  /// VMAs (start, end, perms, offset, inode, path), every move of its pages executed since left
  /// each page of its range on the target by the kernel's own answer (move_pages status: Moved
  /// or AlreadyThere) or not present (NotPresent: -ENOENT, or -EFAULT for a zero page inside
  /// the mapping; an allocator's holes, which the full read saw too, need no re-read), with at
  /// least one page placed, or reached none of them (NotAttempted); and the full read is
  /// younger than daemon.full_locate_interval. A range of base pages or THPs that a move left
  /// uncertain (a busy page, a range reached in part, a range whose every page is gone: pages
  /// the kernel answered neither placed nor absent) is queried again alone at the next tick that
  /// reuses the read (Migrator::locatePages: one status query per base page of the range, no
  /// walk of the process; TickReport::rangesRelocated), up to kRelocateMaxBytes per process a
  /// tick; anything else (a page gone with its VMA, a dropped range, a hugetlb range, a region
  /// the heat model does not know, more than that many bytes) forces a full read. Between full
  /// reads the heat model keeps the locations, updated by the outcomes of tierd's own moves and
  /// those queries, and the resident memory per node is shifted by the bytes moved; what the kernel
  /// moves by itself (reclaim, NUMA balancing), pages faulted in inside an unchanged mapping and
  /// THPs split after a move (TickReport::thpSplitAfterMove) are seen at the next full read.
  /// TickReport::locatesReused counts the reuses.
  ///
  /// Settling: placement is settled when each of the last kSettleTicks ticks came after
  /// samples were seen (EngineTotals::samples > 0) with no process entering or leaving a scope,
  /// and the bytes their plans moved or would move (promotions and demotions) sum to at most
  /// sampling.settle_trickle_percent of this tick's hot bytes (WorkloadReport::hotFastBytes +
  /// hotSlowBytes over all workloads; 0 %: only empty plans). A tick with a scope change,
  /// before any sample, or with no hot bytes empties the window and is not counted (with none, the
  /// sampler shows no contrast: a settled DAMON source sampling too coarsely to tell hot from cold
  /// would otherwise stay settled). While settled every source is told
  /// HotnessSource::setSettled(true) (it may then sample within
  /// sampling.settled_cpu_budget_percent), at the first tick that is not, setSettled(false).
  /// Sources are told after planning, each tick.
  Result<TickReport> tick(uint64_t nowNs, int64_t deadlineNs, const std::atomic<bool>* stop);

  /// Ticks whose plans settling looks at (see tick(), Settling::kTicks).
  static constexpr uint64_t kSettleTicks = Settling::kTicks;
  /// Most bytes of ranges queued per process for a query of their own (tick(), "locate
  /// phase"; LocationCache::kRelocateMaxBytes).
  static constexpr uint64_t kRelocateMaxBytes = LocationCache::kRelocateMaxBytes;
  /// Ticks between two scans of the kdamonds' DAMOS schemes (topology::KernelTieringWatch).
  static constexpr uint64_t kDamosRescanTicks = topology::KernelTieringWatch::kRescanTicks;

  /// At `nowNs` (monotonic), before a settled wait of `waitNs` (TickReport::nextIntervalNs of
  /// the tick just done):
  /// with sampling.settled_damon_window > 0, pauses every source that can pause
  /// (HotnessSource::pauseLeadNs() > 0) and returns the lead: the longest of the window and
  /// the sources' leads, how long before the next tick resumeSampling() must run. 0 (nothing
  /// paused) when the key is 0, no source can pause, or the lead is not shorter than the wait.
  /// A source that cannot pause, or whose pause fails, samples on; each such problem is
  /// appended to `problems` once per process (a failed pause: each time).
  uint64_t pauseSampling(uint64_t nowNs, uint64_t waitNs, std::vector<std::string>& problems);
  /// At `nowNs`, resumes every source pauseSampling() paused and adds the time each was paused
  /// to EngineTotals::samplingPausedNs; failures are appended to `problems` (the source's next
  /// drain() retries). Idempotent.
  void resumeSampling(uint64_t nowNs, std::vector<std::string>& problems);

  /// Between ticks (the daemon every telemetry::kCollectIntervalNs while it waits): every
  /// hotness source moves what the kernel buffered into its own queue for the next tick
  /// (HotnessSource::collect), so a perf ring cannot fill between two ticks. Failures are
  /// reported by the next tick (TickReport::problems, EngineTotals::sourceErrors).
  void collectSamples();

  /// Stops every hotness source (and so removes our kdamonds). Idempotent.
  void shutdown();

  /// Sets the operator's holds (Control.h), applied from the next tick on: a held workload's
  /// planned moves are not executed (WorkloadReport::heldBytes); a workload in `restore` with a
  /// request number not seen yet starts its restore (RestoreStatus), one planned batch a tick,
  /// executed first in the tick's migration step, also while `all` holds the arbiter's plans
  /// (not in a dry run). A workload no longer in `restore` has its status dropped.
  void setHold(OperatorHold hold);
  /// The holds setHold() set last.
  const OperatorHold& hold() const { return restores_.hold(); }
  /// Each restore's progress, by workload name.
  const std::map<std::string, RestoreStatus>& restores() const { return restores_.restores(); }

  const EngineTotals& totals() const { return totals_; }
  const policy::HeatModel& heat() const { return heat_; }

  /// The hotness sources running now, by pid (for per-source stats; pointers valid until the
  /// next tick(), setConfig() or shutdown()).
  std::vector<std::pair<pid_t, const telemetry::HotnessSource*>> sources() const;
  /// The configured workload name a tracked pid belongs to, "" when the pid is not tracked.
  std::string workloadOf(pid_t pid) const;

 private:
  void applyWorkloadParams();
  /// Each workload's planned, moved and held bytes (addMoveFigures) after the migration step,
  /// and each restore's progress (OperatorRestores::account). `planned`: the executed batch's
  /// input, its first `restoreMoves` ranges a restore's; `held`: the arbiter's moves not executed
  /// (heldByOperator).
  void accountMoves(const std::vector<MoveRange>& planned, size_t restoreMoves,
                    const std::vector<MoveRange>& held, TickReport& report);
  /// True when the operator holds the workload of tracked `pid` (OperatorRestores::holds).
  bool heldByOperator(pid_t pid) const;
  /// Drops the tracked processes that are not in `scoped` under their workload, or whose pid now
  /// names another process (start time changed), or that exec'd another executable than the one
  /// their `command` workload matched (admitted again as a new process while it still matches);
  /// each is said in report.scopeChanges (a reused pid also in report.problems) and counted in
  /// EngineTotals::vanishedPids.
  void dropGoneProcs(const std::map<pid_t, Scoped>& scoped, TickReport& report);
  /// Starts tracking the processes of `scoped` not tracked yet, and tries again the failed
  /// sources whose back-off ended by `nowNs` (EngineTotals::sourceRetries).
  void admitProcs(const std::map<pid_t, Scoped>& scoped, uint64_t nowNs, TickReport& report);
  /// Adds this tick's plan (`plannedBytes`: the arbiter's promote + demote bytes) to the
  /// settling window (Settling), sets report.settled, settleWindowBytes and nextIntervalNs and
  /// tells every source. Needs report.workloads and report.scopeChanges filled.
  void settle(uint64_t plannedBytes, TickReport& report);
  /// The policy's view of this tick without its workloads: the machine (machineContext) and each
  /// tracked process's home and allowed nodes (TaskPlacement::read).
  policy::TickContext snapshot(uint64_t nowNs, const topology::Topology& topo, TickReport& report);
  /// Adds each workload's regions (HeatModel) to `ctx` and its WorkloadReport to `report`, with
  /// `numaStat` (ScopePass::numaStat) where read, else `memory` (per workload index,
  /// LocationCache::memoryOf) and its regions' figures (addRegionFigures); completes
  /// report.sourceStates' regions, heat and hot bytes.
  void addWorkloads(policy::TickContext& ctx,
                    const std::map<size_t, std::map<NodeId, NodeMemory>>& numaStat,
                    std::vector<std::map<NodeId, NodeMemory>> memory, TickReport& report);
  /// The locate phase (see tick()) of every tracked process at `nowNs` (LocationCache::refresh);
  /// fills report.locatesReused, rangesRelocated, thpSplitAfterMove and their totals.
  void locate(uint64_t nowNs, const topology::Topology& topo, TickReport& report);
  /// Executes `moves` (Migrator::execute) until `deadlineNs`, or a floor after `tickStartNs`
  /// (see tick()), and feeds the outcomes back into the location cache and the heat model; fills
  /// report.batch and the moved bytes.
  void execute(const std::vector<MoveRange>& moves, int64_t tickStartNs, int64_t deadlineNs,
               const std::atomic<bool>* stop, const topology::Topology& topo, TickReport& report);
  void startProc(pid_t pid, const Scoped& s, uint64_t nowNs, TickReport& report);
  bool stillSame(pid_t pid);
  void dropProc(pid_t pid);

  sys::SysRoot root_;
  std::unique_ptr<topology::TopologyProvider> topology_;
  std::unique_ptr<migrate::Migrator> migrator_;
  std::shared_ptr<migrate::ProcReads> reads_;  // set by locations_, read by the migrator
  ScopeTracker scopes_;                        ///< the workloads' scopes, resolved each tick
  std::shared_ptr<const policy::CompiledConfig> config_;
  policy::HeatModel heat_;
  policy::Arbiter arbiter_;
  /// Mappings, page locations and resident memory per tracked process (the locate phase); holds
  /// references to *migrator_ and heat_.
  LocationCache locations_;
  TrackedProcesses procs_;                      ///< the tracked processes and their identities
  SamplingSources sources_;                     ///< each tracked process's hotness source
  topology::KernelTieringWatch kernelTiering_;  ///< the kernel's own tiering, each tick
  TaskPlacement placement_;                     ///< each tracked process's home and allowed nodes
  EngineTotals totals_;
  /// The settling window (tick(), "Settling") and the span a weighted source's rates cover
  /// after a settled wait (SamplingSources::drain).
  Settling settling_;
  OperatorRestores restores_;  ///< the operator's holds and restores (setHold, restores())
};

}  // namespace tierd::daemon

#pragma once
/// \file
/// OperatorRestores: the operator's holds on page moves and restores (tierctl pause, resume and
/// restore, through the daemon's control socket: Control.h). Which planned moves a hold keeps
/// back, the moves of each restore (regions back to where their mapping's memory policy puts
/// them) and each restore's progress from the executed batch. Owned and called by one thread (the
/// engine's); reads /proc/PID/numa_maps only through the reader it is given. Depends on
/// tierd_policy, tierd_topology, tierd_sys and tierd_core.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policy/Config.h"
#include "policy/TickContext.h"
#include "tierd/core/Migration.h"
#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/sys/ProcMaps.h"
#include "tierd/topology/Topology.h"

namespace tierd::daemon {

/// The operator's holds on page moves, set through the daemon's control socket (tierctl pause,
/// resume and restore; Control.h). Not kept across a restart of tierd.
struct OperatorHold {
  bool all = false;                 ///< tierctl pause: the arbiter's plans move nothing
  std::set<std::string> workloads;  ///< workloads whose planned moves are held (pause W, restore W)
  /// Workloads being restored (tierctl restore W), each with its request number: a new number
  /// starts the restore again. Their planned moves are held as those of `workloads` are.
  std::map<std::string, uint64_t> restore;
  bool operator==(const OperatorHold&) const = default;
};

/// Where the kernel's memory policy of a mapping puts its pages, from the policy word of its
/// /proc/PID/numa_maps line (Documentation/admin-guide/mm/numa_memory_policy.rst) and the task's
/// home nodes (policy::TaskNodes::home): "default" and "local": `home`; "bind:S", "prefer:S",
/// "prefer (many):S", "preferred_many:S": the node list S (mode flags such as "=static" and
/// "=relative" ignored). nullopt for interleave and weighted interleave (pages spread by offset:
/// tierctl restore leaves them) and for a word it does not know; an empty set when `home` is
/// unknown.
std::optional<std::set<NodeId>> policyNodes(std::string_view policy, const std::set<NodeId>& home);

/// A workload's restore (OperatorHold::restore, OperatorRestores::restores()): its regions moved
/// back, per 2 MiB region (per huge page for hugetlb) like any move of tierd, to the node its
/// mapping's memory policy puts them (policyNodes, within the task's cpuset.mems: a region already
/// on one of those nodes stays; else it goes to the one of them among the task's home nodes, or of
/// all of them when none is a home node, with the most free memory left by the regions planned
/// before it). A direction whose migration.max_*_mib_per_s is 0 is not moved (`blockedBytes`).
struct RestoreStatus {
  uint64_t request = 0;        ///< OperatorHold::restore's number it answers
  uint64_t ticks = 0;          ///< ticks that planned moves for it
  uint64_t movedBytes = 0;     ///< bytes moved back so far
  uint64_t plannedBytes = 0;   ///< bytes of the regions its last tick planned
  uint64_t failedPages = 0;    ///< pages its last tick could not move (no memory, busy, refused)
  size_t skippedMappings = 0;  ///< mappings left where they are at its last tick (interleave,
                               ///< a policy word not known, numa_maps unreadable)
  /// Bytes of regions its last tick left because their direction is turned off
  /// (migration.max_promote_mib_per_s or max_demote_mib_per_s = 0).
  uint64_t blockedBytes = 0;
  /// No region is left to move back, or a tick moved nothing though it reached every page it
  /// planned (what is left cannot move: `failedPages`). Its regions are planned no more.
  bool done = false;
};

/// The holds and restores across ticks.
class OperatorRestores {
 public:
  /// Reads one process's /proc/PID/numa_maps (the engine's reader: the SysRoot's, or the fake
  /// kernel's in tests).
  using NumaMapsReader = std::function<Result<std::vector<sys::NumaMapsVma>>(pid_t pid)>;

  /// Sets the operator's holds, applied from the next tick on: a workload in `restore` with a
  /// request number not seen yet starts its restore (RestoreStatus); one no longer in `restore`,
  /// or with another number, has its status dropped.
  void setHold(OperatorHold hold);
  /// The holds setHold() set last.
  const OperatorHold& hold() const { return hold_; }
  /// Each restore's progress, by workload name.
  const std::map<std::string, RestoreStatus>& restores() const { return restores_; }
  /// True when the operator holds the planned moves of workload `name` (OperatorHold::all, or
  /// `name` in OperatorHold::workloads or OperatorHold::restore).
  bool holds(const std::string& name) const;

  /// The moves of this tick's restores that are not done, from `ctx`'s regions and tasks: per
  /// restore, the numa_maps of each pid of `pidsOf(workload)` (ascending; unreadable ones count
  /// a skipped mapping), read with `numaMaps`, each region's target chosen as RestoreStatus
  /// says, `topo` telling promotion from demotion. `config` names the workloads (by
  /// WorkloadView::id) and gives migration.max_*_mib_per_s. Sets each restore's plannedBytes,
  /// skippedMappings and blockedBytes, counts a tick that planned, or marks it done when nothing
  /// is left to plan.
  std::vector<MoveRange> plan(const policy::TickContext& ctx, const topology::Topology& topo,
                              const policy::CompiledConfig& config,
                              const std::function<std::vector<pid_t>(policy::WorkloadId)>& pidsOf,
                              const NumaMapsReader& numaMaps);
  /// After the migration step: the first `restoreMoves` ranges of `batch` (the executed batch,
  /// restores' moves first) add their moved bytes and failed pages (busy, denied, no memory, not
  /// migrated, other errors, node not allowed) to the restore of their pid's workload
  /// (`workloadOf`); a restore that moved nothing though every page was reached is done. An
  /// empty batch (a dry run, nothing executed) changes nothing.
  void account(const BatchResult& batch, size_t restoreMoves,
               const std::function<std::string(pid_t)>& workloadOf);

 private:
  OperatorHold hold_;                              ///< setHold()
  std::map<std::string, RestoreStatus> restores_;  ///< by workload name
};

}  // namespace tierd::daemon

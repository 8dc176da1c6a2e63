#pragma once
/// \file
/// The immutable per-tick snapshot that policies and the arbiter decide over (docs/architecture.md,
/// "One tick": clock -> topology and scopes -> samples -> heat model -> snapshot -> policies ->
/// arbiter). tierd fills NodeFacts from tierd::topology (policy/ never includes topology headers)
/// and the workloads' regions from the HeatModel plus the migrator's locate() answers.

#include <sys/types.h>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "policy/Config.h"
#include "tierd/core/Types.h"

namespace tierd::policy {

/// Which tier a node is managed as (mirrors tierd::topology::Tier without including it).
enum class TierKind {
  Fast,  ///< promotion target (DRAM)
  Slow,  ///< demotion target (CXL)
};

/// What the policy needs to know about one memory node this tick.
struct NodeFacts {
  NodeId id = -1;
  TierKind tier = TierKind::Slow;
  uint64_t totalBytes = 0;  ///< nodeN/meminfo MemTotal
  uint64_t freeBytes = 0;   ///< nodeN/meminfo MemFree (THP and base pages land here)
  /// Free hugetlb pages per page size in bytes (nodeN/hugepages/hugepages-<kB>kB/free_hugepages).
  std::map<uint64_t, uint64_t> freeHugePages;
  /// Bytes in free blocks of at least PMD order (2 MiB with 4 KiB pages), all zones of the node
  /// (/proc/buddyinfo): what a THP can land in without being split. nullopt = unknown (THP
  /// moves are then bounded by freeBytes alone).
  std::optional<uint64_t> freePmdBlockBytes;
};

/// Where one process runs and may allocate, from /proc/PID/status, filled by the engine.
struct TaskNodes {
  /// Nodes whose CPUs (nodeN/cpulist) are in the task's Cpus_allowed_list: where its accesses
  /// come from. Targets are ranked by SLIT distance from the nearest of them. Empty = unknown:
  /// targets are ranked by room alone.
  std::set<NodeId> home;
  /// The task's cpuset.mems (Mems_allowed_list): move_pages(2) to any other node fails with
  /// -EACCES, so no target outside it is planned. Empty = unknown: no constraint.
  std::set<NodeId> allowed;
  bool operator==(const TaskNodes&) const = default;
};

/// Identifies a workload in the model and the snapshot: its index in CompiledConfig::workloads.
using WorkloadId = uint32_t;

/// One tracked region of one process: a 2 MiB aligned range (1 GiB for 1 GiB hugetlb), clipped
/// to its mapping, with where it lives, how hot it is and when it last moved.
struct RegionView {
  pid_t pid = 0;
  uint64_t start = 0;       ///< bytes, virtual address, region-aligned unless clipped to a mapping
  uint64_t length = 0;      ///< bytes
  uint64_t pageSize = 0;    ///< bytes: backing page size (2 MiB THP region, hugetlb size, or base)
  bool hugetlb = false;     ///< backed by a hugetlb pool (needs a free huge page on the target)
  NodeId node = -1;         ///< current node (-1 = unknown: never planned)
  double heat = 0.0;        ///< decayed samples at the snapshot time (HeatModel)
  uint64_t lastMoveNs = 0;  ///< time of the last executed move or busy back-off, 0 = never
  bool held = false;        ///< held by the ping-pong guard or a permanent error: never planned
  /// CLOCK_MONOTONIC ns before which the region is not planned again after consecutive Busy
  /// results (HeatModel: lastMoveNs + cooldown * 2^(busy results in a row - 1), capped at 16
  /// cooldowns); 0 = no busy back-off (only the cooldown after lastMoveNs applies).
  uint64_t retryAtNs = 0;
  bool operator==(const RegionView&) const = default;
};

/// One workload's part of the snapshot.
struct WorkloadView {
  WorkloadId id = 0;                ///< index into config->workloads
  std::vector<RegionView> regions;  ///< sorted by (pid, start)
};

/// The snapshot. Plain data: the same TickContext always yields the same plan.
struct TickContext {
  uint64_t nowNs = 0;                   ///< CLOCK_MONOTONIC ns of this tick
  std::vector<NodeFacts> nodes;         ///< memory nodes of both tiers, ascending id
  std::vector<WorkloadView> workloads;  ///< ascending id
  /// Per pid: home and allowed nodes. A pid absent here is unknown (room alone, no constraint).
  std::map<pid_t, TaskNodes> tasks;
  /// SLIT distance from node to node (nodeN/distance; 10 = local), every online node including
  /// CPU-only ones. Empty or a pair missing = unknown (that pair does not rank).
  std::map<NodeId, std::map<NodeId, uint64_t>> distance;
  std::shared_ptr<const CompiledConfig> config;  ///< never null
  uint64_t basePageSize = 4096;  ///< bytes (sysconf(_SC_PAGESIZE)); 64 KiB on some arm64/POWER
  bool dryRun = false;           ///< --dry-run or daemon.dry_run: plan but execute nothing
};

}  // namespace tierd::policy

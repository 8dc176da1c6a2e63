#pragma once
/// \file
/// Arbiter: turns all workloads' proposals into one MigrationPlan for the tick.
///
/// Why: each workload's policy only sees itself; the fast tier, the nodes' free memory and the
/// copy bandwidth are shared. The arbiter ranks across workloads and enforces, in this order:
///  1. demotions first: over-quota demotions, then (when fast-tier free memory is under the
///     headroom) the coldest regions at or below their cold_threshold, then the coolest regions
///     below the promotion cut of workloads with a fill_headroom (what fills placed), until the
///     shortfall is covered. Demotions execute before promotions, so their freed bytes count as
///     room;
///  2. promotions, hottest first across all workloads, each only if its workload stays within
///     fast_quota and a fast node keeps its share of the headroom afterwards; when room or quota
///     is missing, a promotion may be paired with demotions of the same workload's fast-tier
///     regions whose heat is below 1/kExchangeRatio of its heat (ranking against capacity, not a
///     fixed threshold: HeatModel.h); then the fill candidates (warm regions below the cut) of
///     workloads with a fill_headroom, warmest first, under the same limits, never by an exchange,
///     and only while a fast node keeps its share of that fill_headroom free too;
///  3. never more into a node than it can take: free bytes for base pages, free bytes and free
///     blocks of PMD order (/proc/buddyinfo, when known) for THP, free hugetlb pages of the
///     region's size for hugetlb regions. Never a node outside the task's cpuset.mems
///     (TaskNodes::allowed; counted as skippedNotAllowed). Among the nodes that can take it, the
///     nearest (SLIT distance) to the task's home nodes (the nodes of its allowed CPUs) wins, then
///     the one with most room left, then the lowest id; a promotion goes only to a node nearer
///     home than the region's node (socket-1 DRAM is not faster for a socket-0 task than the
///     CXL behind socket 0);
///  4. per-direction byte budgets: a token bucket per direction refilled at
///     max_{promote,demote}_mib_per_s and holding at most one tick's worth (rate * interval).
///     A single region bigger than a whole tick's budget (a 1 GiB page) may go only when the
///     bucket is full, and leaves the bucket in debt, so the long-run rate holds.
/// Cooldown and the ping-pong guard are applied by the policy from the region history the
/// HeatModel keeps. In dry-run the plan is returned flagged, and no budget is spent.
/// Deterministic: same state and TickContext -> same plan. Not thread-safe (tick loop only).

#include <cstdint>
#include <vector>

#include "policy/Policy.h"
#include "policy/TickContext.h"
#include "tierd/core/Types.h"

namespace tierd::policy {

/// Counters of one plan() call.
struct ArbiterStats {
  uint64_t promoteBytes = 0;   ///< bytes planned slow -> fast
  uint64_t demoteBytes = 0;    ///< bytes planned fast -> slow
  uint64_t promotions = 0;     ///< ranges planned up
  uint64_t demotions = 0;      ///< ranges planned down
  uint64_t exchanges = 0;      ///< demotions planned to make room for a hotter region
  uint64_t skippedBudget = 0;  ///< candidates left for lack of byte budget
  uint64_t skippedNoRoom = 0;  ///< candidates left because no target node could take them
  /// Fill candidates (fill_headroom) left because the fast tier's room above fill_headroom and
  /// fast_headroom ran out: expected, a fill takes only spare room. Not in skippedNoRoom.
  uint64_t skippedFillNoRoom = 0;
  uint64_t skippedQuota = 0;  ///< promotions left because the workload is at its quota
  /// Candidates left because every node of the target tier is outside the task's cpuset.mems
  /// (TaskNodes::allowed, /proc/PID/status Mems_allowed_list): not an error, never retried into
  /// a failing move_pages call.
  uint64_t skippedNotAllowed = 0;
  /// Promotions left because no fast node with room is nearer the task's CPUs (TaskNodes::home,
  /// SLIT distance) than the node the region is on: remote DRAM can be slower than near CXL.
  uint64_t skippedNotCloser = 0;
  uint64_t coolingDown = 0;       ///< regions within their cooldown (all workloads)
  uint64_t held = 0;              ///< regions held by the ping-pong guard or a refusal
  uint64_t fastShortBytes = 0;    ///< headroom minus fast-tier free bytes, when positive
  double promoteCreditBytes = 0;  ///< promote bucket after this plan (negative = debt)
  double demoteCreditBytes = 0;   ///< demote bucket after this plan
};

/// The arbiter's answer for one tick.
struct ArbiterDecision {
  MigrationPlan plan;                 ///< demotions first, then promotions; execute in order
  std::vector<MoveReason> reasons;    ///< one per plan.moves element
  std::vector<WorkloadId> workloads;  ///< one per plan.moves element
  ArbiterStats stats;
  bool dryRun = false;  ///< true: report the plan, execute nothing
};

/// Merges workload proposals under budgets and capacities. Holds the budget buckets between
/// ticks; everything else comes from the TickContext.
class Arbiter {
 public:
  /// A demotion may be exchanged for a promotion when its heat is below promotion heat / this.
  static constexpr double kExchangeRatio = 2.0;

  /// Plans the tick. `ctx.config` must not be null.
  ArbiterDecision plan(const TickContext& ctx);

 private:
  bool started_ = false;
  uint64_t lastNs_ = 0;
  double promoteCredit_ = 0;
  double demoteCredit_ = 0;
};

}  // namespace tierd::policy

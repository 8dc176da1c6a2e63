#pragma once
/// \file
/// Per-workload policy: from the tick snapshot, which of a workload's regions want to move.
/// Pure and deterministic: no syscalls, no clock, same TickContext -> same proposal.
///
/// - Promote: regions on the slow tier with heat >= hot_threshold (and, when hot_ratio is set,
///   >= hot_ratio x the mean heat of the same process's located regions), hottest first. The
///   arbiter takes them while the fast tier has room above its headroom and the workload is under
///   its quota, or exchanges them for clearly colder fast-tier regions of the same workload.
/// - Fill (fill_headroom below 100%, with hot_ratio set): the slow-tier regions below that cut but
///   at or above hot_threshold, warmest first. The arbiter takes them after every hot region, only
///   into free room above fill_headroom and fast_headroom and within the quota, never by an
///   exchange.
/// - Demote for quota: when the workload holds more fast-tier bytes than fast_quota, its coldest
///   fast-tier regions, just enough to get back under it (whatever their heat).
/// - Demotable: the other fast-tier regions, coldest first; under free-memory pressure those
///   with heat <= cold_threshold go, then, for a workload with a fill_headroom, those below the
///   promotion cut (what fills placed: warm regions yield to the workload's own allocations
///   before the kernel reclaims); any of them may be exchanged for a hotter region.
/// - A region that moved (or backed off) less than `cooldown` ago, a held region (ping-pong guard,
///   permanent refusal) and a region whose node is unknown are never proposed.

#include <cstdint>
#include <map>
#include <vector>

#include "policy/TickContext.h"

namespace tierd::policy {

/// Why a move was planned (reported per move and in stats).
enum class MoveReason {
  Hot,        ///< promotion of a hot slow-tier region
  OverQuota,  ///< demotion: the workload is over its fast_quota
  Pressure,   ///< demotion: fast-tier free memory is under the headroom
  Exchange,   ///< demotion making room for a clearly hotter region of the same workload
  Fill,       ///< promotion of a warm region (below the cut) into free fast memory
};
/// "hot", "over-quota", "pressure", "exchange", "fill".
const char* moveReasonName(MoveReason r);

/// One region proposed to move.
struct Candidate {
  WorkloadId workload = 0;
  RegionView region;
  Direction direction = Direction::Promote;
  MoveReason reason = MoveReason::Hot;
};

/// What one workload wants this tick.
struct WorkloadProposal {
  WorkloadId workload = 0;
  std::vector<Candidate> promote;      ///< hottest first
  std::vector<Candidate> fill;         ///< fill_headroom: below the cut, warmest first
  std::vector<Candidate> demoteQuota;  ///< coldest first; exactly enough to meet the quota
  std::vector<Candidate> demotable;    ///< remaining eligible fast-tier regions, coldest first
  /// Of `demotable`, the regions free-memory pressure may demote first: heat <= cold_threshold,
  /// coldest first.
  std::vector<Candidate> cold;
  /// Of `demotable`, for a workload with a fill_headroom only: the regions above cold_threshold
  /// but below the promotion cut (PromotionCut), coldest first. Pressure demotes them after every
  /// workload's cold regions. Without a fill_headroom a region below the cut stays: only fills
  /// put warm regions on the fast tier on purpose.
  std::vector<Candidate> warm;
  uint64_t fastBytes = 0;          ///< bytes of the workload's tracked regions on the fast tier
  uint64_t quotaBytes = 0;         ///< fast_quota resolved against the fast tier's total bytes
  uint64_t fillHeadroomBytes = 0;  ///< fill_headroom resolved against the fast tier's total
  uint64_t coolingDown = 0;        ///< regions skipped: moved within their cooldown
  uint64_t held = 0;               ///< regions skipped: held
};

/// Bytes of all fast-tier nodes in `ctx` (MemTotal sum).
uint64_t fastTierTotal(const TickContext& ctx);

/// The proposal of workload `w` (an element of ctx.workloads).
WorkloadProposal proposeForWorkload(const TickContext& ctx, const WorkloadView& w);

/// The heat at or above which a region of `w` is hot, in heat units (HeatModel), per process:
/// the profile's hot_threshold, raised to hot_ratio x the mean heat of that process's regions on
/// known nodes when hot_ratio is set. The mean is taken per process, not over the workload,
/// because heat is only comparable between regions one sampler measured alike: each process has
/// its own kdamond (DamonSource.h), whose adaptive sample interval sets where its access
/// estimates saturate (5 checks per aggregation at 20 ms: at most ~11.5; 12 at 8 ms: ~38), so a
/// workload-wide mean set by a finely sampled process would keep every region of a coarsely
/// sampled one below the cut for good. The same cut promotes regions and counts hot bytes in
/// reports and metrics.
class PromotionCut {
 public:
  PromotionCut(const TickContext& ctx, const WorkloadView& w);
  /// The cut for regions of process `pid` (hot_threshold for a process with no region).
  double of(pid_t pid) const;

 private:
  double threshold_ = 0;
  std::map<pid_t, double> byPid_;
};

}  // namespace tierd::policy

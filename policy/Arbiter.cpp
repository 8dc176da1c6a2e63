#include "policy/Arbiter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "tierd/core/Units.h"

namespace tierd::policy {
namespace {

// Free capacity of one node as the plan consumes and frees it.
struct Room {
  const NodeFacts* facts = nullptr;
  int64_t freeBytes = 0;
  int64_t reserve = 0;  // headroom share kept free (fast nodes)
  std::map<uint64_t, int64_t> freeHuge;
  std::optional<int64_t> freePmdBlocks;  // bytes in free PMD-order blocks, when known
};

// Why pickTarget found no node.
enum class NoTarget { None, NoRoom, NotAllowed, NotCloser };

// A target node, or why there is none.
struct Pick {
  NodeId node = -1;
  NoTarget why = NoTarget::None;
};

constexpr uint64_t kUnknownDistance = UINT64_MAX;

// A token bucket for one direction.
struct Bucket {
  double credit = 0;
  double perTick = 0;  // rate * interval: the bucket's size
  // True when `bytes` may be spent now (see Arbiter.h rule 4).
  bool allows(uint64_t bytes) const {
    double b = static_cast<double>(bytes);
    return perTick > 0 && (b <= credit || (b > perTick && credit >= perTick));
  }
  // Spends `bytes` if allowed.
  bool take(uint64_t bytes) {
    if (!allows(bytes)) return false;
    credit -= static_cast<double>(bytes);
    return true;
  }
};

// The bucket for `mibps` after `elapsed` seconds since it held `credit`: refilled by elapsed
// time and capped at one tick's worth (`interval` seconds).
Bucket refill(double credit, uint64_t mibps, double interval, double elapsed) {
  double rate = static_cast<double>(mibps) * static_cast<double>(kMiB);
  Bucket b;
  b.perTick = rate * interval;
  b.credit = std::min(credit + rate * elapsed, b.perTick);
  return b;
}

// What a demotion changes, as one value: an exchange saves it and restores it when the
// promotion it made room for still does not fit.
struct PlanState {
  std::map<NodeId, Room> rooms;
  std::map<WorkloadId, int64_t> used;  // fast-tier bytes per workload after the planned moves
  Bucket demote;
  ArbiterStats stats;
  int64_t shortfall = 0;  // headroom minus fast-tier free bytes after the planned demotions
  size_t demotions = 0;   // planned demotions (a prefix of Planner::demotions_)
};

// Planned moves of one direction, in plan order.
struct MoveList {
  std::vector<MoveRange> moves;
  std::vector<MoveReason> reasons;
  std::vector<WorkloadId> workloads;
};

// One plan() call: the rules of Arbiter.h applied to one TickContext, in their order.
class Planner {
 public:
  Planner(const TickContext& ctx, Bucket promote, Bucket demote)
      : ctx_(ctx), cfg_(*ctx.config), promote_(promote) {
    s_.demote = demote;
    countRooms();
    propose();
  }

  // 1. Demotions: over quota, then pressure (coldest first across workloads).
  void demoteOverQuota() {
    for (const WorkloadProposal& p : props_)
      for (const Candidate& c : p.demoteQuota)
        tryDemote(c, MoveReason::OverQuota);
  }
  void demoteForPressure();

  // 2. Promotions, hottest first across workloads, with exchanges when room or quota is short;
  // then the warm regions of workloads with a fill_headroom into the room left, no exchanges.
  void promoteHottest();
  void fillRoom();

  // Copies the plan into `out` (demotions first, then promotions) with the stats, and the
  // budgets left into `promote` and `demote`.
  void finish(ArbiterDecision& out, Bucket& promote, Bucket& demote);

 private:
  void countRooms();
  void propose();
  bool isThp(const RegionView& r) const;
  uint64_t homeDistance(const TaskNodes* t, NodeId node) const;
  int64_t nodeShare(uint64_t tierBytes, const NodeFacts& n) const;
  Pick pickTarget(const RegionView& r, TierKind tier, uint64_t fillHeadroom = 0) const;
  int64_t roomLeft(const Room& room, const RegionView& r, uint64_t fillHeadroom = 0) const;
  void countSkip(NoTarget why);
  void applyMove(const RegionView& r, NodeId target);
  MoveRange range(const RegionView& r, NodeId target, Direction d) const;
  bool tryDemote(const Candidate& c, MoveReason why);
  bool overQuota(const Candidate& c) {
    return s_.used[c.workload] + static_cast<int64_t>(c.region.length) > quota_[c.workload];
  }
  // A fill also keeps its workload's fill_headroom free.
  Pick promotionTarget(const Candidate& c) {
    if (overQuota(c)) return Pick{-1, NoTarget::NoRoom};
    return pickTarget(c.region, TierKind::Fast,
                      c.reason == MoveReason::Fill ? byId_[c.workload]->fillHeadroomBytes : 0);
  }
  Pick exchange(const Candidate& c);
  void tryPromote(const Candidate& c, bool mayExchange);
  void rollback(const PlanState& saved);

  const TickContext& ctx_;
  const CompiledConfig& cfg_;
  Bucket promote_;
  PlanState s_;
  std::vector<WorkloadProposal> props_;
  std::map<WorkloadId, int64_t> quota_;
  std::map<WorkloadId, const WorkloadProposal*> byId_;
  std::map<WorkloadId, size_t> nextCold_;  // index into demotable for exchanges
  std::set<std::pair<pid_t, uint64_t>> planned_;
  MoveList demotions_, promotions_;
  uint64_t fastTotal_ = 0;  // bytes of all fast nodes (fastTierTotal)
};

// Fast node `n`'s share, by capacity, of `tierBytes` kept over the whole fast tier.
int64_t Planner::nodeShare(uint64_t tierBytes, const NodeFacts& n) const {
  return static_cast<int64_t>(static_cast<long double>(tierBytes) * n.totalBytes / fastTotal_);
}

// Node rooms and the fast tier's headroom, shared by node capacity.
void Planner::countRooms() {
  const uint64_t fastTotal = fastTotal_ = fastTierTotal(ctx_);
  const uint64_t headroom = cfg_.migration.fastHeadroom.resolve(fastTotal);
  int64_t fastFree = 0;
  for (const NodeFacts& n : ctx_.nodes) {
    Room r;
    r.facts = &n;
    r.freeBytes = static_cast<int64_t>(n.freeBytes);
    for (auto& [size, count] : n.freeHugePages)
      r.freeHuge[size] = static_cast<int64_t>(count);
    if (n.freePmdBlockBytes) r.freePmdBlocks = static_cast<int64_t>(*n.freePmdBlockBytes);
    if (n.tier == TierKind::Fast && fastTotal > 0) {
      r.reserve = nodeShare(headroom, n);
      fastFree += static_cast<int64_t>(n.freeBytes);
    }
    s_.rooms[n.id] = r;
  }
  s_.shortfall = static_cast<int64_t>(headroom) - fastFree;
  s_.stats.fastShortBytes = s_.shortfall > 0 ? static_cast<uint64_t>(s_.shortfall) : 0;
}

// Each workload's proposal, its fast-tier use and quota.
void Planner::propose() {
  for (const WorkloadView& w : ctx_.workloads) {
    props_.push_back(proposeForWorkload(ctx_, w));
    s_.used[w.id] = static_cast<int64_t>(props_.back().fastBytes);
    quota_[w.id] = static_cast<int64_t>(props_.back().quotaBytes);
    s_.stats.coolingDown += props_.back().coolingDown;
    s_.stats.held += props_.back().held;
  }
}

// THP regions move whole only into a free block of PMD order (else the kernel splits them).
bool Planner::isThp(const RegionView& r) const {
  return !r.hugetlb && r.pageSize > ctx_.basePageSize &&
         cfg_.migration.pageGranularity != PageGranularity::Base;
}

// SLIT distance of `node` from the nearest of the task's home nodes; 0 when homes are unknown
// (every node ranks the same), kUnknownDistance when no row names the pair.
uint64_t Planner::homeDistance(const TaskNodes* t, NodeId node) const {
  if (!t || t->home.empty() || ctx_.distance.empty()) return 0;
  uint64_t best = kUnknownDistance;
  for (NodeId h : t->home) {
    auto row = ctx_.distance.find(h);
    if (row == ctx_.distance.end()) continue;
    auto d = row->second.find(node);
    if (d != row->second.end()) best = std::min(best, d->second);
  }
  return best;
}

// What `room` has left after taking region `r`: hugetlb pages of its size, else bytes above the
// reserve, or above the node's share of `fillHeadroom` when that is more (and, for THP, in free
// PMD-order blocks); negative when it cannot take it.
int64_t Planner::roomLeft(const Room& room, const RegionView& r, uint64_t fillHeadroom) const {
  if (r.hugetlb) {
    auto it = room.freeHuge.find(r.pageSize);
    int64_t pages = static_cast<int64_t>(r.length / std::max<uint64_t>(1, r.pageSize));
    return it == room.freeHuge.end() ? -1 : it->second - pages;
  }
  int64_t reserve = room.reserve;
  if (fillHeadroom > 0 && fastTotal_ > 0)
    reserve = std::max(reserve, nodeShare(fillHeadroom, *room.facts));
  int64_t left = room.freeBytes - static_cast<int64_t>(r.length) - reserve;
  if (isThp(r) && room.freePmdBlocks)
    left = std::min(left, *room.freePmdBlocks - static_cast<int64_t>(r.length));
  return left;
}

// Picks the node of `tier` that can take region `r` (keeping `fillHeadroom` free, for a fill):
// inside the task's allowed nodes, nearest its home nodes, then with the most room left. A
// promotion goes only to a node nearer home than the region's node. No node: why (no allowed node;
// a node with room, but not nearer home; else no room).
Pick Planner::pickTarget(const RegionView& r, TierKind tier, uint64_t fillHeadroom) const {
  auto task = ctx_.tasks.find(r.pid);
  const TaskNodes* t = task == ctx_.tasks.end() ? nullptr : &task->second;
  const uint64_t here = homeDistance(t, r.node);
  bool anyAllowed = false, roomNotCloser = false;
  NodeId best = -1;
  uint64_t bestDistance = kUnknownDistance;
  int64_t bestRoom = -1;
  for (auto& [id, room] : s_.rooms) {
    if (room.facts->tier != tier || id == r.node) continue;
    if (t && !t->allowed.empty() && !t->allowed.count(id)) continue;
    anyAllowed = true;
    const uint64_t distance = homeDistance(t, id);
    const int64_t left = roomLeft(room, r, fillHeadroom);
    if (left < 0) continue;
    if (tier == TierKind::Fast && here != 0 && !(distance < here)) {
      roomNotCloser = true;
      continue;
    }
    if (best < 0 || distance < bestDistance || (distance == bestDistance && left > bestRoom))
      best = id, bestDistance = distance, bestRoom = left;
  }
  if (best >= 0) return {best, NoTarget::None};
  if (!anyAllowed && t && !t->allowed.empty()) return {-1, NoTarget::NotAllowed};
  if (roomNotCloser) return {-1, NoTarget::NotCloser};
  return {-1, NoTarget::NoRoom};
}

void Planner::countSkip(NoTarget why) {
  if (why == NoTarget::NotAllowed)
    ++s_.stats.skippedNotAllowed;
  else if (why == NoTarget::NotCloser)
    ++s_.stats.skippedNotCloser;
  else
    ++s_.stats.skippedNoRoom;
}

// Moves region `r`'s pages (or bytes, and PMD blocks for THP) from its node's room to `target`'s.
void Planner::applyMove(const RegionView& r, NodeId target) {
  Room& to = s_.rooms[target];
  auto from = s_.rooms.find(r.node);
  if (r.hugetlb) {
    int64_t pages = static_cast<int64_t>(r.length / std::max<uint64_t>(1, r.pageSize));
    to.freeHuge[r.pageSize] -= pages;
    if (from != s_.rooms.end()) from->second.freeHuge[r.pageSize] += pages;
  } else {
    to.freeBytes -= static_cast<int64_t>(r.length);
    if (from != s_.rooms.end()) from->second.freeBytes += static_cast<int64_t>(r.length);
    if (isThp(r)) {
      if (to.freePmdBlocks) *to.freePmdBlocks -= static_cast<int64_t>(r.length);
      if (from != s_.rooms.end() && from->second.freePmdBlocks)
        *from->second.freePmdBlocks += static_cast<int64_t>(r.length);
    }
  }
}

MoveRange Planner::range(const RegionView& r, NodeId target, Direction d) const {
  MoveRange m;
  m.pid = r.pid;
  m.start = r.start;
  m.length = r.length;
  m.pageSize = r.pageSize;
  if (cfg_.migration.pageGranularity == PageGranularity::Base && !r.hugetlb)
    m.pageSize = ctx_.basePageSize;
  m.target = target;
  m.direction = d;
  return m;
}

// Plans one demotion if a slow node can take it and the budget allows.
bool Planner::tryDemote(const Candidate& c, MoveReason why) {
  if (planned_.count({c.region.pid, c.region.start})) return false;
  const Pick pick = pickTarget(c.region, TierKind::Slow);
  const NodeId target = pick.node;
  if (target < 0) {
    countSkip(pick.why);
    return false;
  }
  if (!s_.demote.take(c.region.length)) {
    ++s_.stats.skippedBudget;
    return false;
  }
  applyMove(c.region, target);
  planned_.insert({c.region.pid, c.region.start});
  demotions_.moves.push_back(range(c.region, target, Direction::Demote));
  demotions_.reasons.push_back(why);
  demotions_.workloads.push_back(c.workload);
  ++s_.demotions;
  s_.used[c.workload] -= static_cast<int64_t>(c.region.length);
  if (!c.region.hugetlb) s_.shortfall -= static_cast<int64_t>(c.region.length);
  s_.stats.demoteBytes += c.region.length;
  ++s_.stats.demotions;
  if (why == MoveReason::Exchange) ++s_.stats.exchanges;
  return true;
}

// Demotes, until the shortfall is covered: the coldest regions at or below their cold_threshold,
// across workloads; then the coolest warm regions (below the cut) of workloads that fill.
void Planner::demoteForPressure() {
  if (s_.shortfall <= 0) return;
  for (std::vector<Candidate> WorkloadProposal::*list :
       {&WorkloadProposal::cold, &WorkloadProposal::warm}) {
    std::vector<const Candidate*> pressure;
    for (const WorkloadProposal& p : props_)
      for (const Candidate& c : p.*list)
        pressure.push_back(&c);
    std::sort(pressure.begin(), pressure.end(), [](const Candidate* a, const Candidate* b) {
      return std::make_tuple(a->region.heat, a->workload, a->region.pid, a->region.start) <
             std::make_tuple(b->region.heat, b->workload, b->region.pid, b->region.start);
    });
    for (const Candidate* c : pressure) {
      if (s_.shortfall <= 0) return;
      tryDemote(*c, MoveReason::Pressure);
    }
  }
}

// Undoes the demotions planned since `saved` was taken.
void Planner::rollback(const PlanState& saved) {
  for (size_t k = saved.demotions; k < demotions_.moves.size(); ++k)
    planned_.erase({demotions_.moves[k].pid, demotions_.moves[k].start});
  demotions_.moves.resize(saved.demotions);
  demotions_.reasons.resize(saved.demotions);
  demotions_.workloads.resize(saved.demotions);
  s_ = saved;
}

// Exchange: demote colder fast-tier regions of c's workload, coldest first, until the promotion
// fits. Tentative: undone unless the promotion then fits. Returns the last pick for the
// promotion: its target, or (undone) why the last try found none.
Pick Planner::exchange(const Candidate& c) {
  const RegionView& r = c.region;
  const WorkloadProposal& p = *byId_[c.workload];
  size_t& i = nextCold_[c.workload];
  const PlanState saved = s_;
  Pick pick{-1, NoTarget::NoRoom};
  size_t j = i;
  while (pick.node < 0 && j < p.demotable.size()) {
    const Candidate& d = p.demotable[j++];
    if (planned_.count({d.region.pid, d.region.start}) || d.region.hugetlb) continue;
    if (!(d.region.heat * Arbiter::kExchangeRatio < r.heat)) break;  // coldest first: none colder
    if (!tryDemote(d, MoveReason::Exchange)) break;
    pick = promotionTarget(c);
  }
  if (pick.node >= 0)
    i = j;
  else
    rollback(saved);
  return pick;
}

// Plans promotion `c` if the budget, its workload's quota and a fast node allow, making room or
// quota by an exchange when they are what is missing and `mayExchange`.
void Planner::tryPromote(const Candidate& c, bool mayExchange) {
  const RegionView& r = c.region;
  if (!promote_.allows(r.length)) {
    ++s_.stats.skippedBudget;
    return;
  }
  Pick pick = promotionTarget(c);
  // Exchanges make room or quota; they cannot make a node allowed or nearer.
  if (mayExchange && pick.node < 0 && !r.hugetlb && pick.why == NoTarget::NoRoom &&
      promote_.allows(r.length))
    pick = exchange(c);
  if (pick.node < 0) {
    if (overQuota(c))
      ++s_.stats.skippedQuota;
    else if (c.reason == MoveReason::Fill && pick.why == NoTarget::NoRoom)
      ++s_.stats.skippedFillNoRoom;
    else
      countSkip(pick.why);
    return;
  }
  if (!promote_.take(r.length)) {
    ++s_.stats.skippedBudget;
    return;
  }
  applyMove(r, pick.node);
  planned_.insert({r.pid, r.start});
  promotions_.moves.push_back(range(r, pick.node, Direction::Promote));
  promotions_.reasons.push_back(c.reason);
  promotions_.workloads.push_back(c.workload);
  s_.used[c.workload] += static_cast<int64_t>(r.length);
  s_.stats.promoteBytes += r.length;
  ++s_.stats.promotions;
}

// Candidates of all workloads, hottest first (ties: workload, pid, start).
std::vector<const Candidate*> hottestFirst(const std::vector<WorkloadProposal>& props,
                                           std::vector<Candidate> WorkloadProposal::*list) {
  std::vector<const Candidate*> out;
  for (const WorkloadProposal& p : props)
    for (const Candidate& c : p.*list)
      out.push_back(&c);
  std::sort(out.begin(), out.end(), [](const Candidate* a, const Candidate* b) {
    if (a->region.heat != b->region.heat) return a->region.heat > b->region.heat;
    return std::make_tuple(a->workload, a->region.pid, a->region.start) <
           std::make_tuple(b->workload, b->region.pid, b->region.start);
  });
  return out;
}

void Planner::promoteHottest() {
  for (const WorkloadProposal& p : props_)
    byId_[p.workload] = &p;
  for (const Candidate* c : hottestFirst(props_, &WorkloadProposal::promote))
    tryPromote(*c, true);
}

// Warm regions go only into room nothing hotter wanted: after every hot promotion, and never by
// an exchange, so a fill demotes nothing (a later hot region may exchange it out).
void Planner::fillRoom() {
  for (const Candidate* c : hottestFirst(props_, &WorkloadProposal::fill))
    tryPromote(*c, false);
}

void Planner::finish(ArbiterDecision& out, Bucket& promote, Bucket& demote) {
  for (const MoveList* list : {&demotions_, &promotions_}) {
    out.plan.moves.insert(out.plan.moves.end(), list->moves.begin(), list->moves.end());
    out.reasons.insert(out.reasons.end(), list->reasons.begin(), list->reasons.end());
    out.workloads.insert(out.workloads.end(), list->workloads.begin(), list->workloads.end());
  }
  out.stats = s_.stats;
  promote = promote_;
  demote = s_.demote;
}

}  // namespace

ArbiterDecision Arbiter::plan(const TickContext& ctx) {
  const CompiledConfig& cfg = *ctx.config;
  ArbiterDecision out;
  out.dryRun = ctx.dryRun || cfg.daemon.dryRun;

  // Budgets: refill by elapsed time (one interval on the first tick), cap at one tick's worth.
  const double interval = static_cast<double>(cfg.daemon.intervalNs) / 1e9;
  const double elapsed =
      started_ ? static_cast<double>(ctx.nowNs > lastNs_ ? ctx.nowNs - lastNs_ : 0) / 1e9
               : interval;
  Bucket promote = refill(promoteCredit_, cfg.migration.maxPromoteMiBPerS, interval, elapsed);
  Bucket demote = refill(demoteCredit_, cfg.migration.maxDemoteMiBPerS, interval, elapsed);
  const double promoteRefilled = promote.credit, demoteRefilled = demote.credit;

  Planner planner(ctx, promote, demote);
  planner.demoteOverQuota();
  planner.demoteForPressure();
  planner.promoteHottest();
  planner.fillRoom();
  planner.finish(out, promote, demote);

  started_ = true;
  lastNs_ = ctx.nowNs;
  promoteCredit_ = out.dryRun ? promoteRefilled : promote.credit;
  demoteCredit_ = out.dryRun ? demoteRefilled : demote.credit;
  out.stats.promoteCreditBytes = promoteCredit_;
  out.stats.demoteCreditBytes = demoteCredit_;
  return out;
}

}  // namespace tierd::policy

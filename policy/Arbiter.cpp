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

}  // namespace

ArbiterDecision Arbiter::plan(const TickContext& ctx) {
  const CompiledConfig& cfg = *ctx.config;
  ArbiterDecision out;
  out.dryRun = ctx.dryRun || cfg.daemon.dryRun;
  ArbiterStats& st = out.stats;

  // Budgets: refill by elapsed time (one interval on the first tick), cap at one tick's worth.
  const double interval = static_cast<double>(cfg.daemon.intervalNs) / 1e9;
  const double elapsed =
      started_ ? static_cast<double>(ctx.nowNs > lastNs_ ? ctx.nowNs - lastNs_ : 0) / 1e9
               : interval;
  auto refill = [&](double credit, uint64_t mibps) {
    double rate = static_cast<double>(mibps) * static_cast<double>(kMiB);
    Bucket b;
    b.perTick = rate * interval;
    b.credit = std::min(credit + rate * elapsed, b.perTick);
    return b;
  };
  Bucket promote = refill(promoteCredit_, cfg.migration.maxPromoteMiBPerS);
  Bucket demote = refill(demoteCredit_, cfg.migration.maxDemoteMiBPerS);
  const double promoteRefilled = promote.credit, demoteRefilled = demote.credit;

  // Node rooms and the fast tier's headroom, shared by node capacity.
  const uint64_t fastTotal = fastTierTotal(ctx);
  const uint64_t headroom = cfg.migration.fastHeadroom.resolve(fastTotal);
  std::map<NodeId, Room> rooms;
  int64_t fastFree = 0;
  for (const NodeFacts& n : ctx.nodes) {
    Room r;
    r.facts = &n;
    r.freeBytes = static_cast<int64_t>(n.freeBytes);
    for (auto& [size, count] : n.freeHugePages)
      r.freeHuge[size] = static_cast<int64_t>(count);
    if (n.freePmdBlockBytes) r.freePmdBlocks = static_cast<int64_t>(*n.freePmdBlockBytes);
    if (n.tier == TierKind::Fast && fastTotal > 0) {
      r.reserve =
          static_cast<int64_t>(static_cast<long double>(headroom) * n.totalBytes / fastTotal);
      fastFree += static_cast<int64_t>(n.freeBytes);
    }
    rooms[n.id] = r;
  }
  int64_t shortfall = static_cast<int64_t>(headroom) - fastFree;
  st.fastShortBytes = shortfall > 0 ? static_cast<uint64_t>(shortfall) : 0;

  // THP regions move whole only into a free block of PMD order (else the kernel splits them).
  auto isThp = [&](const RegionView& r) {
    return !r.hugetlb && r.pageSize > ctx.basePageSize &&
           cfg.migration.pageGranularity != PageGranularity::Base;
  };
  // SLIT distance of `node` from the nearest of the task's home nodes; 0 when homes are unknown
  // (every node ranks the same), kUnknownDistance when no row names the pair.
  auto homeDistance = [&](const TaskNodes* t, NodeId node) -> uint64_t {
    if (!t || t->home.empty() || ctx.distance.empty()) return 0;
    uint64_t best = kUnknownDistance;
    for (NodeId h : t->home) {
      auto row = ctx.distance.find(h);
      if (row == ctx.distance.end()) continue;
      auto d = row->second.find(node);
      if (d != row->second.end()) best = std::min(best, d->second);
    }
    return best;
  };
  // Picks the node of `tier` that can take region `r`: inside the task's allowed nodes, nearest
  // its home nodes, then with the most room left. A promotion goes only to a node nearer home
  // than the region's node. No node: why (no allowed node; a node with room, but not nearer home;
  // else no room).
  auto pickTarget = [&](const RegionView& r, TierKind tier) -> Pick {
    auto task = ctx.tasks.find(r.pid);
    const TaskNodes* t = task == ctx.tasks.end() ? nullptr : &task->second;
    const uint64_t here = homeDistance(t, r.node);
    bool anyAllowed = false, roomNotCloser = false;
    NodeId best = -1;
    uint64_t bestDistance = kUnknownDistance;
    int64_t bestRoom = -1;
    for (auto& [id, room] : rooms) {
      if (room.facts->tier != tier || id == r.node) continue;
      if (t && !t->allowed.empty() && !t->allowed.count(id)) continue;
      anyAllowed = true;
      const uint64_t distance = homeDistance(t, id);
      int64_t left;
      if (r.hugetlb) {
        auto it = room.freeHuge.find(r.pageSize);
        int64_t pages = static_cast<int64_t>(r.length / std::max<uint64_t>(1, r.pageSize));
        left = it == room.freeHuge.end() ? -1 : it->second - pages;
      } else {
        left = room.freeBytes - static_cast<int64_t>(r.length) - room.reserve;
        if (isThp(r) && room.freePmdBlocks)
          left = std::min(left, *room.freePmdBlocks - static_cast<int64_t>(r.length));
      }
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
  };
  auto countSkip = [&](NoTarget why) {
    if (why == NoTarget::NotAllowed)
      ++st.skippedNotAllowed;
    else if (why == NoTarget::NotCloser)
      ++st.skippedNotCloser;
    else
      ++st.skippedNoRoom;
  };
  auto applyMove = [&](const RegionView& r, NodeId target) {
    Room& to = rooms[target];
    auto from = rooms.find(r.node);
    if (r.hugetlb) {
      int64_t pages = static_cast<int64_t>(r.length / std::max<uint64_t>(1, r.pageSize));
      to.freeHuge[r.pageSize] -= pages;
      if (from != rooms.end()) from->second.freeHuge[r.pageSize] += pages;
    } else {
      to.freeBytes -= static_cast<int64_t>(r.length);
      if (from != rooms.end()) from->second.freeBytes += static_cast<int64_t>(r.length);
      if (isThp(r)) {
        if (to.freePmdBlocks) *to.freePmdBlocks -= static_cast<int64_t>(r.length);
        if (from != rooms.end() && from->second.freePmdBlocks)
          *from->second.freePmdBlocks += static_cast<int64_t>(r.length);
      }
    }
  };

  std::vector<WorkloadProposal> props;
  std::map<WorkloadId, int64_t> used, quota;
  for (const WorkloadView& w : ctx.workloads) {
    props.push_back(proposeForWorkload(ctx, w));
    used[w.id] = static_cast<int64_t>(props.back().fastBytes);
    quota[w.id] = static_cast<int64_t>(props.back().quotaBytes);
    st.coolingDown += props.back().coolingDown;
    st.held += props.back().held;
  }

  std::vector<MoveRange> demotions, promotions;
  std::vector<MoveReason> demoteReasons;
  std::vector<WorkloadId> demoteWorkloads, promoteWorkloads;
  std::set<std::pair<pid_t, uint64_t>> planned;
  auto range = [&](const RegionView& r, NodeId target, Direction d) {
    MoveRange m;
    m.pid = r.pid;
    m.start = r.start;
    m.length = r.length;
    m.pageSize = r.pageSize;
    if (cfg.migration.pageGranularity == PageGranularity::Base && !r.hugetlb)
      m.pageSize = ctx.basePageSize;
    m.target = target;
    m.direction = d;
    return m;
  };
  // Plans one demotion if a slow node can take it and the budget allows.
  auto tryDemote = [&](const Candidate& c, MoveReason why) {
    if (planned.count({c.region.pid, c.region.start})) return false;
    const Pick pick = pickTarget(c.region, TierKind::Slow);
    const NodeId target = pick.node;
    if (target < 0) {
      countSkip(pick.why);
      return false;
    }
    if (!demote.take(c.region.length)) {
      ++st.skippedBudget;
      return false;
    }
    applyMove(c.region, target);
    planned.insert({c.region.pid, c.region.start});
    demotions.push_back(range(c.region, target, Direction::Demote));
    demoteReasons.push_back(why);
    demoteWorkloads.push_back(c.workload);
    used[c.workload] -= static_cast<int64_t>(c.region.length);
    if (!c.region.hugetlb) shortfall -= static_cast<int64_t>(c.region.length);
    st.demoteBytes += c.region.length;
    ++st.demotions;
    if (why == MoveReason::Exchange) ++st.exchanges;
    return true;
  };

  // 1. Demotions: over quota, then pressure (coldest first across workloads).
  for (const WorkloadProposal& p : props)
    for (const Candidate& c : p.demoteQuota)
      tryDemote(c, MoveReason::OverQuota);
  if (shortfall > 0) {
    std::vector<const Candidate*> pressure;
    for (const WorkloadProposal& p : props)
      for (const Candidate& c : p.demotable)
        if (c.region.heat <= cfg.workloads.at(c.workload).policy.coldThreshold)
          pressure.push_back(&c);
    std::sort(pressure.begin(), pressure.end(), [](const Candidate* a, const Candidate* b) {
      return std::make_tuple(a->region.heat, a->workload, a->region.pid, a->region.start) <
             std::make_tuple(b->region.heat, b->workload, b->region.pid, b->region.start);
    });
    for (const Candidate* c : pressure) {
      if (shortfall <= 0) break;
      tryDemote(*c, MoveReason::Pressure);
    }
  }

  // 2. Promotions, hottest first across workloads, with exchanges when room or quota is short.
  std::vector<const Candidate*> hot;
  std::map<WorkloadId, const WorkloadProposal*> byId;
  std::map<WorkloadId, size_t> nextCold;  // index into demotable for exchanges
  for (const WorkloadProposal& p : props) {
    byId[p.workload] = &p;
    for (const Candidate& c : p.promote)
      hot.push_back(&c);
  }
  std::sort(hot.begin(), hot.end(), [](const Candidate* a, const Candidate* b) {
    if (a->region.heat != b->region.heat) return a->region.heat > b->region.heat;
    return std::make_tuple(a->workload, a->region.pid, a->region.start) <
           std::make_tuple(b->workload, b->region.pid, b->region.start);
  });
  for (const Candidate* c : hot) {
    const RegionView& r = c->region;
    if (!promote.allows(r.length)) {
      ++st.skippedBudget;
      continue;
    }
    bool overQuota = used[c->workload] + static_cast<int64_t>(r.length) > quota[c->workload];
    Pick pick = overQuota ? Pick{-1, NoTarget::NoRoom} : pickTarget(r, TierKind::Fast);
    NodeId target = pick.node;
    // Exchanges make room or quota; they cannot make a node allowed or nearer.
    if (target < 0 && !r.hugetlb && pick.why == NoTarget::NoRoom && promote.allows(r.length)) {
      // Exchange: demote colder fast-tier regions of this workload, coldest first, until the
      // promotion fits. Tentative: undone unless the promotion then fits.
      const WorkloadProposal& p = *byId[c->workload];
      size_t& i = nextCold[c->workload];
      auto savedRooms = rooms;
      auto savedUsed = used;
      Bucket savedDemote = demote;
      ArbiterStats savedStats = st;
      int64_t savedShortfall = shortfall;
      size_t savedCount = demotions.size();
      std::vector<std::pair<pid_t, uint64_t>> added;
      size_t j = i;
      while (target < 0 && j < p.demotable.size()) {
        const Candidate& d = p.demotable[j++];
        if (planned.count({d.region.pid, d.region.start}) || d.region.hugetlb) continue;
        if (!(d.region.heat * kExchangeRatio < r.heat)) break;  // coldest first: none colder
        if (!tryDemote(d, MoveReason::Exchange)) break;
        added.push_back({d.region.pid, d.region.start});
        overQuota = used[c->workload] + static_cast<int64_t>(r.length) > quota[c->workload];
        pick = overQuota ? Pick{-1, NoTarget::NoRoom} : pickTarget(r, TierKind::Fast);
        target = pick.node;
      }
      if (target >= 0) {
        i = j;
      } else {  // undo
        rooms = std::move(savedRooms);
        used = std::move(savedUsed);
        demote = savedDemote;
        st = savedStats;
        shortfall = savedShortfall;
        demotions.resize(savedCount);
        demoteReasons.resize(savedCount);
        demoteWorkloads.resize(savedCount);
        for (auto& k : added)
          planned.erase(k);
        overQuota = used[c->workload] + static_cast<int64_t>(r.length) > quota[c->workload];
      }
    }
    if (target < 0) {
      if (overQuota)
        ++st.skippedQuota;
      else
        countSkip(pick.why);
      continue;
    }
    if (!promote.take(r.length)) {
      ++st.skippedBudget;
      continue;
    }
    applyMove(r, target);
    planned.insert({r.pid, r.start});
    promotions.push_back(range(r, target, Direction::Promote));
    promoteWorkloads.push_back(c->workload);
    used[c->workload] += static_cast<int64_t>(r.length);
    st.promoteBytes += r.length;
    ++st.promotions;
  }

  for (size_t k = 0; k < demotions.size(); ++k) {
    out.plan.moves.push_back(demotions[k]);
    out.reasons.push_back(demoteReasons[k]);
    out.workloads.push_back(demoteWorkloads[k]);
  }
  for (size_t k = 0; k < promotions.size(); ++k) {
    out.plan.moves.push_back(promotions[k]);
    out.reasons.push_back(MoveReason::Hot);
    out.workloads.push_back(promoteWorkloads[k]);
  }

  started_ = true;
  lastNs_ = ctx.nowNs;
  promoteCredit_ = out.dryRun ? promoteRefilled : promote.credit;
  demoteCredit_ = out.dryRun ? demoteRefilled : demote.credit;
  st.promoteCreditBytes = promoteCredit_;
  st.demoteCreditBytes = demoteCredit_;
  return out;
}

}  // namespace tierd::policy

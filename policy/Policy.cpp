#include "policy/Policy.h"

#include <algorithm>

namespace tierd::policy {

const char* moveReasonName(MoveReason r) {
  switch (r) {
    case MoveReason::Hot:
      return "hot";
    case MoveReason::OverQuota:
      return "over-quota";
    case MoveReason::Pressure:
      return "pressure";
    case MoveReason::Exchange:
      return "exchange";
    case MoveReason::Fill:
      return "fill";
  }
  return "?";
}

uint64_t fastTierTotal(const TickContext& ctx) {
  uint64_t total = 0;
  for (const NodeFacts& n : ctx.nodes)
    if (n.tier == TierKind::Fast) total += n.totalBytes;
  return total;
}

PromotionCut::PromotionCut(const TickContext& ctx, const WorkloadView& w) {
  const WorkloadPolicy& pol = ctx.config->workloads.at(w.id).policy;
  threshold_ = pol.hotThreshold;
  if (pol.hotRatio <= 0) return;
  std::map<pid_t, std::pair<double, size_t>> sums;  // pid -> (heat sum, regions on known nodes)
  for (const RegionView& r : w.regions)
    for (const NodeFacts& node : ctx.nodes)
      if (node.id == r.node) {
        auto& [sum, n] = sums[r.pid];
        sum += r.heat;
        ++n;
        break;
      }
  for (const auto& [pid, s] : sums)
    byPid_[pid] = std::max(threshold_, pol.hotRatio * s.first / static_cast<double>(s.second));
}

double PromotionCut::of(pid_t pid) const {
  auto it = byPid_.find(pid);
  return it == byPid_.end() ? threshold_ : it->second;
}

WorkloadProposal proposeForWorkload(const TickContext& ctx, const WorkloadView& w) {
  WorkloadProposal out;
  out.workload = w.id;
  const WorkloadPolicy& pol = ctx.config->workloads.at(w.id).policy;
  const uint64_t fastTotal = fastTierTotal(ctx);
  out.quotaBytes = pol.fastQuota.resolve(fastTotal);
  out.fillHeadroomBytes = pol.fillHeadroom.resolve(fastTotal);
  auto tierOf = [&](NodeId id) -> const NodeFacts* {
    for (const NodeFacts& n : ctx.nodes)
      if (n.id == id) return &n;
    return nullptr;
  };
  const PromotionCut cut(ctx, w);
  std::vector<Candidate> fast;
  for (const RegionView& r : w.regions) {
    const NodeFacts* n = tierOf(r.node);
    if (!n) continue;  // unknown node: never planned
    if (n->tier == TierKind::Fast) out.fastBytes += r.length;
    if (r.held) {
      ++out.held;
      continue;
    }
    if ((r.lastMoveNs != 0 && ctx.nowNs < r.lastMoveNs + pol.cooldownNs) ||
        ctx.nowNs < r.retryAtNs) {
      ++out.coolingDown;
      continue;
    }
    if (n->tier == TierKind::Slow) {
      if (r.heat >= cut.of(r.pid))
        out.promote.push_back({w.id, r, Direction::Promote, MoveReason::Hot});
      else if (pol.fills() && r.heat >= pol.hotThreshold)
        out.fill.push_back({w.id, r, Direction::Promote, MoveReason::Fill});
    } else {
      fast.push_back({w.id, r, Direction::Demote, MoveReason::Pressure});
    }
  }
  auto key = [](const Candidate& c) { return std::make_tuple(c.region.pid, c.region.start); };
  auto hottestFirst = [&](const Candidate& a, const Candidate& b) {
    if (a.region.heat != b.region.heat) return a.region.heat > b.region.heat;
    return key(a) < key(b);
  };
  std::sort(out.promote.begin(), out.promote.end(), hottestFirst);
  std::sort(out.fill.begin(), out.fill.end(), hottestFirst);
  std::sort(fast.begin(), fast.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.region.heat != b.region.heat) return a.region.heat < b.region.heat;
    return key(a) < key(b);
  });
  uint64_t used = out.fastBytes;
  for (Candidate& c : fast) {
    if (used > out.quotaBytes) {
      c.reason = MoveReason::OverQuota;
      used -= std::min(used, c.region.length);
      out.demoteQuota.push_back(c);
    } else {
      out.demotable.push_back(c);
      if (c.region.heat <= pol.coldThreshold)
        out.cold.push_back(c);
      else if (pol.fills() && c.region.heat < cut.of(c.region.pid))
        out.warm.push_back(c);
    }
  }
  return out;
}

}  // namespace tierd::policy

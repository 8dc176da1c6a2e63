#include "tierd/daemon/Restores.h"

#include <algorithm>
#include <iterator>

#include "tierd/sys/Parsers.h"

namespace tierd::daemon {

std::optional<std::set<NodeId>> policyNodes(std::string_view policy, const std::set<NodeId>& home) {
  // "bind=static:1-2", "prefer (many):1", "interleave:0-3", "weighted interleave:0-1".
  const size_t colon = policy.find(':');
  std::string_view mode = policy.substr(0, colon);
  if (mode.find("interleave") != std::string_view::npos) return std::nullopt;
  if (const size_t flags = mode.find('='); flags != std::string_view::npos)
    mode = mode.substr(0, flags);
  if (mode == "default" || mode == "local") return home;
  if (mode != "bind" && mode != "prefer" && mode != "prefer (many)" && mode != "preferred_many" &&
      mode != "preferred")
    return std::nullopt;
  if (colon == std::string_view::npos) return std::nullopt;
  auto nodes = sys::parseIdList(policy.substr(colon + 1), "numa_maps policy");
  if (!nodes || nodes->empty()) return std::nullopt;
  return std::set<NodeId>(nodes->begin(), nodes->end());
}

void OperatorRestores::setHold(OperatorHold hold) {
  for (auto it = restores_.begin(); it != restores_.end();) {
    auto wanted = hold.restore.find(it->first);
    if (wanted == hold.restore.end() || wanted->second != it->second.request)
      it = restores_.erase(it);
    else
      ++it;
  }
  for (const auto& [name, request] : hold.restore)
    if (!restores_.count(name)) restores_[name].request = request;
  hold_ = std::move(hold);
}

bool OperatorRestores::holds(const std::string& name) const {
  return hold_.all || hold_.workloads.count(name) || hold_.restore.count(name);
}

std::vector<MoveRange> OperatorRestores::plan(
    const policy::TickContext& ctx, const topology::Topology& topo,
    const policy::CompiledConfig& config,
    const std::function<std::vector<pid_t>(policy::WorkloadId)>& pidsOf,
    const NumaMapsReader& numaMaps) {
  std::vector<MoveRange> moves;
  for (auto& entry : restores_) {
    const std::string& name = entry.first;
    RestoreStatus& status = entry.second;
    if (status.done) continue;
    status.plannedBytes = 0;
    status.skippedMappings = 0;
    const auto w = std::find_if(ctx.workloads.begin(), ctx.workloads.end(),
                                [&](const auto& v) { return config.workloads[v.id].name == name; });
    if (w == ctx.workloads.end()) continue;
    // The policy of each region's mapping: numa_maps of each of the workload's processes.
    std::map<pid_t, std::vector<sys::NumaMapsVma>> vmas;
    for (pid_t pid : pidsOf(w->id)) {
      if (auto read = numaMaps(pid))
        vmas[pid] = std::move(read.value());
      else
        ++status.skippedMappings;
    }
    std::set<std::pair<pid_t, uint64_t>> skipped;  // (pid, VMA start) counted once
    // Room per node as this plan fills it: each region goes to the candidate with most room.
    std::map<NodeId, uint64_t> room;
    for (const policy::NodeFacts& n : ctx.nodes)
      room[n.id] = n.freeBytes;
    status.blockedBytes = 0;
    for (const policy::RegionView& r : w->regions) {
      if (r.node < 0) continue;
      auto v = vmas.find(r.pid);
      if (v == vmas.end()) continue;
      // The VMA holding the region: the last numa_maps line starting at or before it.
      auto after =
          std::upper_bound(v->second.begin(), v->second.end(), r.start,
                           [](uint64_t a, const sys::NumaMapsVma& m) { return a < m.start; });
      if (after == v->second.begin()) continue;
      const sys::NumaMapsVma& vma = *std::prev(after);
      auto task = ctx.tasks.find(r.pid);
      const policy::TaskNodes none;
      const policy::TaskNodes& t = task == ctx.tasks.end() ? none : task->second;
      auto nodes = policyNodes(vma.policy, t.home);
      if (nodes && !t.allowed.empty())
        std::erase_if(*nodes, [&](NodeId n) { return !t.allowed.count(n); });
      if (!nodes || nodes->empty()) {
        if (skipped.insert({r.pid, vma.start}).second) ++status.skippedMappings;
        continue;
      }
      if (nodes->count(r.node)) continue;
      // Among the policy's nodes, the task's home nodes first; then the one with most room.
      std::set<NodeId> pick;
      std::set_intersection(nodes->begin(), nodes->end(), t.home.begin(), t.home.end(),
                            std::inserter(pick, pick.begin()));
      if (pick.empty()) pick = *nodes;
      NodeId target = *pick.begin();
      for (NodeId n : pick)
        if (room[n] > room[target]) target = n;
      const topology::Node* to = topo.node(target);
      MoveRange m;
      m.pid = r.pid;
      m.start = r.start;
      m.length = r.length;
      m.pageSize = r.pageSize;
      m.target = target;
      m.direction = to && to->tier == topology::Tier::Slow ? Direction::Demote : Direction::Promote;
      // migration.max_*_mib_per_s = 0 turns a direction off, for a restore too.
      const policy::MigrationConfig& mc = config.migration;
      if ((m.direction == Direction::Promote ? mc.maxPromoteMiBPerS : mc.maxDemoteMiBPerS) == 0) {
        status.blockedBytes += r.length;
        continue;
      }
      room[target] -= std::min(room[target], r.length);
      moves.push_back(m);
      status.plannedBytes += r.length;
    }
    if (status.plannedBytes == 0)
      status.done = true;
    else
      ++status.ticks;
  }
  return moves;
}

void OperatorRestores::account(const BatchResult& batch, size_t restoreMoves,
                               const std::function<std::string(pid_t)>& workloadOf) {
  if (batch.ranges.empty()) return;  // a dry run, or nothing executed: nothing learnt
  struct Pass {
    uint64_t moved = 0, failed = 0, notAttempted = 0;
  };
  std::map<std::string, Pass> passes;
  for (size_t i = 0; i < batch.ranges.size() && i < restoreMoves; ++i) {
    const RangeResult& r = batch.ranges[i];
    Pass& p = passes[workloadOf(r.range.pid)];
    p.moved += r.bytesMoved;
    p.notAttempted += r.outcomes[MoveOutcome::NotAttempted];
    for (MoveOutcome o :
         {MoveOutcome::Busy, MoveOutcome::Denied, MoveOutcome::NoMemory, MoveOutcome::NotMigrated,
          MoveOutcome::OtherError, MoveOutcome::NodeNotAllowed})
      p.failed += r.outcomes[o];
  }
  for (auto& [name, p] : passes) {
    auto st = restores_.find(name);
    if (st == restores_.end()) continue;
    st->second.movedBytes += p.moved;
    st->second.failedPages = p.failed;
    if (p.moved == 0 && p.notAttempted == 0) st->second.done = true;
  }
}

}  // namespace tierd::daemon

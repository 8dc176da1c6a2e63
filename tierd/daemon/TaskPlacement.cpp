#include "tierd/daemon/TaskPlacement.h"

#include <algorithm>

#include "tierd/sys/Parsers.h"

namespace tierd::daemon {

policy::TickContext machineContext(uint64_t nowNs,
                                   std::shared_ptr<const policy::CompiledConfig> config,
                                   const topology::Topology& topo) {
  policy::TickContext ctx;
  ctx.nowNs = nowNs;
  ctx.dryRun = config->daemon.dryRun;
  ctx.config = std::move(config);
  ctx.basePageSize = topo.caps.basePageSize ? topo.caps.basePageSize : 4096;
  for (const topology::Node& n : topo.nodes) {
    if (n.tier == topology::Tier::None) continue;
    policy::NodeFacts f;
    f.id = n.id;
    f.tier = n.tier == topology::Tier::Fast ? policy::TierKind::Fast : policy::TierKind::Slow;
    f.totalBytes = n.memTotal;
    f.freeBytes = n.memFree;
    for (const topology::HugePagePool& p : n.hugePages)
      f.freeHugePages[p.pageSize] = p.free;
    f.freePmdBlockBytes = n.freePmdBlockBytes;
    ctx.nodes.push_back(f);
  }
  for (const topology::Node& n : topo.nodes)
    ctx.distance[n.id] = n.distance;
  return ctx;
}

TaskPlacement::TaskPlacement(sys::SysRoot root) : root_(std::move(root)) {}

void TaskPlacement::forget(pid_t pid) {
  cpusetReported_.erase(pid);
}

std::optional<policy::TaskNodes> TaskPlacement::read(pid_t pid, const topology::Topology& topo,
                                                     const std::function<bool(pid_t)>& exited,
                                                     TickReport& report, EngineTotals& totals) {
  auto lists = sys::readAllowedLists(root_, pid);
  if (!lists && exited(pid)) return std::nullopt;
  if (!lists) {
    ++totals.statusErrors;
    report.problems.push_back("pid " + std::to_string(pid) +
                              ": placement unknown: " + lists.error().describe());
    return std::nullopt;
  }
  policy::TaskNodes t;
  for (const topology::Node& n : topo.nodes)
    for (int cpu : n.cpus)
      if (lists->cpus.count(cpu)) {
        t.home.insert(n.id);
        break;
      }
  t.allowed.insert(lists->mems.begin(), lists->mems.end());
  // A cpuset that excludes every node of a tier: said once per stretch, counted each tick by
  // the arbiter (skippedNotAllowed).
  std::string excluded;
  for (topology::Tier tier : {topology::Tier::Fast, topology::Tier::Slow}) {
    const std::vector<int> ids = topo.nodesIn(tier);
    const bool none = !ids.empty() && std::none_of(ids.begin(), ids.end(), [&](int id) {
      return t.allowed.count(id) != 0;
    });
    if (none) excluded += std::string(excluded.empty() ? "" : ", ") + topology::tierName(tier);
  }
  auto& said = cpusetReported_[pid];
  if (!excluded.empty() && said != excluded)
    report.problems.push_back("pid " + std::to_string(pid) + ": cpuset.mems " +
                              sys::formatIdList(lists->mems) + " excludes every " + excluded +
                              " node: not moved there");
  said = excluded;
  return t;
}

}  // namespace tierd::daemon

#include "tierd/daemon/Conditions.h"

#include "telemetry/hotness/SourceNames.h"

namespace tierd::daemon {

namespace {

std::string nodeList(const std::vector<NodeId>& nodes) {
  std::string s;
  for (NodeId n : nodes)
    s += (s.empty() ? "" : ",") + std::to_string(n);
  return s.empty() ? "none" : s;
}

std::string tiersWarning(const TickReport& r) {
  if (!r.fastNodes.empty() && !r.slowNodes.empty()) return "";
  return "nothing to tier: this host has " +
         std::string(r.slowNodes.empty() ? "no slow tier" : "no fast tier") + " (fast nodes " +
         nodeList(r.fastNodes) + ", slow nodes " + nodeList(r.slowNodes) + ", classified by " +
         r.topologyMethod +
         "); tierd moves nothing until CXL memory is online as a NUMA node "
         "(`tierctl topology` shows how nodes are classified)";
}

// A workload whose selector matches nothing is the engine's own warning (Engine::tick, once
// per stretch of emptiness); this is the config that names none at all.
std::string workloadsWarning(size_t configured) {
  if (configured != 0) return "";
  return "no [[workload]] in the config: tierd watches no process and moves nothing";
}

std::string sourceWarning(const TickReport& r, const std::string& source) {
  if (source.empty())
    return "no hotness source is available: tierd cannot tell hot pages from cold ones and "
           "moves nothing (`tierctl sampling --probe` says why)";
  const auto kind = telemetry::sourceKindOf(source);
  const std::optional<int> nb = r.topology.caps.numaBalancing;
  if (kind && *kind == telemetry::SourceKind::PerfSoftware && (!nb || *nb == 0))
    return "the hotness source " + source +
           " sees only a page's first touch while kernel.numa_balancing=0 (no hinting faults): "
           "pages never look hot once mapped; give tierd DAMON (CONFIG_DAMON_VADDR) or a PMU "
           "with memory sampling (PEBS, IBS)";
  return "";
}

}  // namespace

bool wantsProgressLine(const TickReport& r, std::optional<uint64_t> lastLineNs, uint64_t nowNs,
                       uint64_t intervalNs) {
  if (!lastLineNs || intervalNs == 0) return true;
  if (r.plannedPromoteBytes || r.plannedDemoteBytes || r.promotedBytes || r.demotedBytes ||
      !r.scopeChanges.empty() || !r.problems.empty())
    return true;
  return nowNs < *lastLineNs || nowNs - *lastLineNs >= intervalNs;
}

void ConditionLog::set(const std::string& key, const std::string& warning, const std::string& ended,
                       std::vector<ConditionLine>& out) {
  auto it = active_.find(key);
  if (!warning.empty()) {
    if (it != active_.end() && it->second == warning) return;
    active_[key] = warning;
    out.push_back({true, warning});
  } else if (it != active_.end()) {
    active_.erase(it);
    out.push_back({false, ended});
  }
}

std::vector<ConditionLine> ConditionLog::update(const TickReport& report,
                                                size_t configuredWorkloads,
                                                const std::string& sourceName) {
  std::vector<ConditionLine> out;
  set("tiers", tiersWarning(report),
      "two tiers now: fast nodes " + nodeList(report.fastNodes) + ", slow nodes " +
          nodeList(report.slowNodes),
      out);
  set("workloads", workloadsWarning(configuredWorkloads), "the config names workloads now", out);
  set("source", sourceWarning(report, sourceName), "the hotness source can see accesses again",
      out);
  return out;
}

std::vector<std::string> ConditionLog::active() const {
  std::vector<std::string> out;
  for (const char* key : {"tiers", "workloads", "source"})
    if (auto it = active_.find(key); it != active_.end()) out.push_back(it->second);
  return out;
}

}  // namespace tierd::daemon

#include "tierd/topology/TopologyJson.h"

#include <algorithm>
#include <sstream>

#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

namespace tierd::topology {
namespace {

template <typename T>
nlohmann::ordered_json optJson(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// Left-aligned table with two spaces between columns.
std::string renderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// "none", or the tag's revision and what it brings, e.g. "tierd1: chunked folio copy, ...".
std::string tierdKernelText(const std::optional<TierdKernel>& k) {
  if (!k) return "none (stock kernel)";
  std::string s = "tierd" + std::to_string(k->revision) + ":";
  if (k->folioCopyChunked) s += " chunked folio copy,";
  if (k->pagesStatBatched) s += " batched move_pages status,";
  s.pop_back();
  return s;
}

// "absent", or e.g. "on, engine threads, 2 threads, min batch 2 MiB; move_pages offloaded: no
// (syscall_or_cpuset not in reasons)".
std::string migrateOffloadText(const std::optional<MigrateOffload>& m) {
  if (!m) return "absent (no kernel-patches/ patch 3)";
  std::string s = m->enabled ? "on" : "off";
  s += ", engine " + (m->engine.empty() ? std::string("unknown") : m->engine);
  if (m->threads) s += ", " + std::to_string(*m->threads) + " threads";
  if (m->minBatchBytes) s += ", min batch " + formatBytes(*m->minBatchBytes);
  if (m->hugetlbOffloaded()) s += ", hugetlb too";
  s += "; tierd's moves offloaded: ";
  if (m->movePagesOffloaded())
    s += "yes";
  else if (!m->enabled)
    s += "no (enable is 0)";
  else
    s += "no (syscall_or_cpuset not in reasons)";
  return s;
}

nlohmann::ordered_json migrateOffloadJson(const std::optional<MigrateOffload>& m) {
  using J = nlohmann::ordered_json;
  if (!m) return nullptr;
  return {{"enabled", m->enabled},
          {"engine", m->engine.empty() ? J(nullptr) : J(m->engine)},
          {"engines", m->engines},
          {"threads", optJson(m->threads)},
          {"min_batch_bytes", optJson(m->minBatchBytes)},
          {"reasons", m->reasons},
          {"move_pages_offloaded", m->movePagesOffloaded()},
          {"hugetlb", m->hugetlbOffloaded()},
          {"counters",
           {{"batches", optJson(m->batches)},
            {"folios", optJson(m->folios)},
            {"bytes", optJson(m->bytes)},
            {"fallbacks", optJson(m->fallbacks)},
            {"hugetlb_folios", optJson(m->hugetlbFolios)}}}};
}

}  // namespace

nlohmann::ordered_json topologyToJson(const Topology& topo) {
  using J = nlohmann::ordered_json;
  J nodes = J::array();
  for (const Node& n : topo.nodes) {
    J hp = J::array();
    for (const HugePagePool& p : n.hugePages)
      hp.push_back({{"page_size_bytes", p.pageSize}, {"total", p.total}, {"free", p.free}});
    J dist = J::object();
    for (const auto& [id, d] : n.distance)
      dist[std::to_string(id)] = d;
    J hmat = nullptr;
    if (n.hmat) {
      hmat = {{"read_latency_ns", optJson(n.hmat->readLatencyNs)},
              {"write_latency_ns", optJson(n.hmat->writeLatencyNs)},
              {"read_bandwidth_mbps", optJson(n.hmat->readBandwidthMBps)},
              {"write_bandwidth_mbps", optJson(n.hmat->writeBandwidthMBps)},
              {"initiators", n.hmat->initiators}};
    }
    nodes.push_back({{"id", n.id},
                     {"tier", tierName(n.tier)},
                     {"reason", n.reason},
                     {"cpus", n.cpus},
                     {"has_cpu", n.hasCpu},
                     {"has_memory", n.hasMemory},
                     {"mem_total_bytes", n.memTotal},
                     {"mem_free_bytes", n.memFree},
                     {"huge_pages", hp},
                     {"distances", dist},
                     {"memory_tier", optJson(n.memoryTier)},
                     {"hmat", hmat}});
  }
  J tiers = J::array();
  for (const auto& [t, ids] : topo.memoryTiers)
    tiers.push_back({{"tier", t}, {"nodes", ids}});
  const Capabilities& c = topo.caps;
  J tierdKernel = nullptr;
  if (c.tierdKernel)
    tierdKernel = {{"revision", c.tierdKernel->revision},
                   {"folio_copy_chunked", c.tierdKernel->folioCopyChunked},
                   {"pages_stat_batched", c.tierdKernel->pagesStatBatched}};
  J caps = {{"kernel_release", c.kernelRelease},
            {"tierd_kernel", tierdKernel},
            {"thp_mode", c.thpMode.empty() ? J(nullptr) : J(c.thpMode)},
            {"pmd_page_size_bytes", c.pmdPageSize},
            {"base_page_size_bytes", c.basePageSize},
            {"numa_balancing", optJson(c.numaBalancing)},
            {"demotion_enabled", optJson(c.demotionEnabled)},
            {"perf_event_paranoid", optJson(c.perfEventParanoid)},
            {"perf_pmus", c.perfPmus},
            {"damon_sysfs", c.damonSysfs},
            {"damon_operations", c.damonOperations},
            {"damon_kdamonds", c.damonKdamonds},
            {"damon_kdamonds_running", c.damonKdamondsRunning},
            {"migrate_offload", migrateOffloadJson(c.migrateOffload)}};
  return {{"schema", kTopologyJsonSchema},
          {"method", topo.method},
          {"fast_nodes", topo.nodesIn(Tier::Fast)},
          {"slow_nodes", topo.nodesIn(Tier::Slow)},
          {"possible", topo.possible},
          {"online", topo.online},
          {"nodes", nodes},
          {"memory_tiers", tiers},
          {"capabilities", caps},
          {"warnings", topo.warnings}};
}

std::string topologyToText(const Topology& topo) {
  std::ostringstream out;
  std::vector<std::vector<std::string>> rows = {{"NODE", "TIER", "CPUS", "TOTAL", "FREE",
                                                 "HUGE PAGES (free/total)", "KTIER", "HMAT rd",
                                                 "REASON"}};
  for (const Node& n : topo.nodes) {
    std::string hp;
    for (const HugePagePool& p : n.hugePages) {
      if (!hp.empty()) hp += " ";
      hp += pageSizeName(p.pageSize) + ":" + std::to_string(p.free) + "/" + std::to_string(p.total);
    }
    std::string hmat = "-";
    if (n.hmat && n.hmat->readLatencyNs) {
      hmat = std::to_string(*n.hmat->readLatencyNs) + "ns";
      if (n.hmat->readBandwidthMBps)
        hmat += "," + std::to_string(*n.hmat->readBandwidthMBps) + "MB/s";
    }
    rows.push_back({std::to_string(n.id), tierName(n.tier),
                    n.cpus.empty() ? "-" : sys::formatIdList(n.cpus), formatBytes(n.memTotal),
                    formatBytes(n.memFree), hp.empty() ? "-" : hp,
                    n.memoryTier ? std::to_string(*n.memoryTier) : "-", hmat, n.reason});
  }
  out << renderTable(rows);
  out << "\nclassified by: " << topo.method << "\n";

  out << "\ndistances:\n";
  std::vector<std::vector<std::string>> drows;
  std::vector<std::string> head = {"from\\to"};
  for (const Node& n : topo.nodes)
    head.push_back(std::to_string(n.id));
  drows.push_back(head);
  for (const Node& n : topo.nodes) {
    std::vector<std::string> r = {std::to_string(n.id)};
    for (const Node& m : topo.nodes) {
      auto it = n.distance.find(m.id);
      r.push_back(it == n.distance.end() ? "-" : std::to_string(it->second));
    }
    drows.push_back(r);
  }
  out << renderTable(drows);

  const Capabilities& c = topo.caps;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v)
      s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("none") : s;
  };
  out << "\ncapabilities:\n";
  std::vector<std::vector<std::string>> crows = {
      {"  kernel", c.kernelRelease.empty() ? "unknown" : c.kernelRelease},
      {"  tierd kernel patches", tierdKernelText(c.tierdKernel)},
      {"  THP mode", c.thpMode.empty() ? "unavailable" : c.thpMode},
      {"  base page size", c.basePageSize ? formatBytes(c.basePageSize) : "unknown"},
      {"  PMD page size", c.pmdPageSize ? formatBytes(c.pmdPageSize) : "unknown"},
      {"  numa_balancing", c.numaBalancing ? std::to_string(*c.numaBalancing) : "unknown"},
      {"  demotion_enabled",
       c.demotionEnabled ? (*c.demotionEnabled ? "true" : "false") : "unknown"},
      {"  perf PMUs", join(c.perfPmus)},
      {"  perf_event_paranoid",
       c.perfEventParanoid ? std::to_string(*c.perfEventParanoid) : "unknown"},
      {"  DAMON sysfs", c.damonSysfs ? "yes, " + std::to_string(c.damonKdamonds) + " kdamond(s), " +
                                           std::to_string(c.damonKdamondsRunning) + " running"
                                     : "no"},
      {"  DAMON operations", c.damonSysfs ? join(c.damonOperations) : "none"},
      {"  migrate offload", migrateOffloadText(c.migrateOffload)}};
  out << renderTable(crows);
  if (!topo.warnings.empty()) {
    out << "\nwarnings:\n";
    for (const auto& w : topo.warnings)
      out << "  " << w << "\n";
  }
  return out.str();
}

}  // namespace tierd::topology

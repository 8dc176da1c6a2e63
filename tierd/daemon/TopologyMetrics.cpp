#include "tierd/daemon/TopologyMetrics.h"

#include <algorithm>
#include <string>

namespace tierd {

void publishTopology(const topology::Topology& topo, telemetry::MetricsSink& sink) {
  using namespace telemetry::metric;
  bool hugetlb1g = false;
  bool anyHmat = false;
  for (const auto& n : topo.nodes) {
    if (n.tier == topology::Tier::None) continue;
    const std::string id = std::to_string(n.id);
    const std::string tier = topology::tierName(n.tier);
    sink.set(kNodeCapacity, {id, tier}, static_cast<double>(n.memTotal));
    sink.set(kNodeUsed, {id, tier},
             static_cast<double>(n.memTotal >= n.memFree ? n.memTotal - n.memFree : 0));
    for (const auto& pool : n.hugePages) {
      const std::string ps = telemetry::pageSizeLabel(pool.pageSize);
      sink.set(kNodeHugetlbPages, {id, tier, ps}, static_cast<double>(pool.total));
      sink.set(kNodeHugetlbFreePages, {id, tier, ps}, static_cast<double>(pool.free));
      if (pool.pageSize == (1ULL << 30)) hugetlb1g = true;
    }
    if (n.hmat) anyHmat = true;
  }
  const auto& c = topo.caps;
  auto has = [](const std::vector<std::string>& v, const char* s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  auto flag = [&](const char* name, bool on) { sink.set(kKernelCapability, {name}, on ? 1 : 0); };
  flag("thp", !c.thpMode.empty() && c.thpMode != "never");
  flag("hugetlb_1g", hugetlb1g);
  flag("memory_tiers", topo.memoryTiers.size() >= 2);
  flag("hmat", anyHmat);
  flag("demotion", c.demotionEnabled.value_or(false));
  flag("numa_balancing_tiering", c.numaBalancing.has_value() && (*c.numaBalancing & 2) != 0);
  flag("damon_sysfs", c.damonSysfs);
  flag("damon_vaddr", has(c.damonOperations, "vaddr"));
  flag("damon_paddr", has(c.damonOperations, "paddr"));
  flag("perf_ibs", has(c.perfPmus, "ibs_op"));
  flag("perf_sw_page_faults", has(c.perfPmus, "software"));
  // tierd's own kernel patches (kernel-patches/), by the release tag -tierdN.
  flag("kernel_folio_copy_chunked", c.tierdKernel && c.tierdKernel->folioCopyChunked);
  flag("kernel_pages_stat_batched", c.tierdKernel && c.tierdKernel->pagesStatBatched);
  // Patch 3 by its sysfs folder; whether tierd's own move_pages(2) calls are offloaded.
  flag("kernel_migrate_offload", c.migrateOffload.has_value());
  flag("kernel_migrate_offload_move_pages",
       c.migrateOffload && c.migrateOffload->movePagesOffloaded());
  // Patch 6 by its counter: hugetlb folios are offloaded too.
  flag("kernel_migrate_offload_hugetlb", c.migrateOffload && c.migrateOffload->hugetlbOffloaded());
}

std::map<std::string, int64_t> migrateOffloadCounters(const topology::Capabilities& caps) {
  std::map<std::string, int64_t> out;
  if (!caps.migrateOffload) return out;
  const topology::MigrateOffload& m = *caps.migrateOffload;
  auto put = [&](const char* name, const std::optional<uint64_t>& v) {
    if (v) out[name] = static_cast<int64_t>(*v);
  };
  put("batches", m.batches);
  put("folios", m.folios);
  put("bytes", m.bytes);
  put("fallbacks", m.fallbacks);
  put("hugetlb_folios", m.hugetlbFolios);
  return out;
}

}  // namespace tierd

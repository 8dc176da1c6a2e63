#include <doctest/doctest.h>

#include "tierd/daemon/TopologyMetrics.h"

using namespace tierd;

TEST_CASE("publishTopology exports memory nodes per tier, hugetlb pools and capability flags") {
  topology::Topology t;
  topology::Node cpuOnly;
  cpuOnly.id = 2;
  cpuOnly.tier = topology::Tier::None;
  topology::Node dram;
  dram.id = 0;
  dram.tier = topology::Tier::Fast;
  dram.memTotal = 16ULL << 30;
  dram.memFree = 4ULL << 30;
  dram.hugePages = {{2ULL << 20, 512, 128}, {1ULL << 30, 4, 1}};
  topology::Node cxl;
  cxl.id = 17;
  cxl.tier = topology::Tier::Slow;
  cxl.memTotal = 64ULL << 30;
  cxl.memFree = 60ULL << 30;
  cxl.hugePages = {{2ULL << 20, 0, 0}};
  cxl.hmat = topology::HmatAccess{};
  t.nodes = {dram, cpuOnly, cxl};
  t.memoryTiers = {{4, {0}}, {35, {17}}};
  t.caps.thpMode = "madvise";
  t.caps.numaBalancing = 2;
  t.caps.demotionEnabled = true;
  t.caps.damonSysfs = true;
  t.caps.damonOperations = {"vaddr", "fvaddr", "paddr"};
  t.caps.perfPmus = {"breakpoint", "software", "tracepoint"};

  telemetry::RecordingSink s;
  publishTopology(t, s);
  CHECK(s.rejectedUpdates() == 0);
  CHECK(s.value("tierd_node_capacity_bytes", {"0", "fast"}) == double(16ULL << 30));
  CHECK(s.value("tierd_node_used_bytes", {"0", "fast"}) == double(12ULL << 30));
  CHECK(s.value("tierd_node_used_bytes", {"17", "slow"}) == double(4ULL << 30));
  CHECK(s.seriesCount("tierd_node_capacity_bytes") == 2);  // the CPU-only node is no tier
  CHECK(s.value("tierd_node_hugetlb_pages", {"0", "fast", "1G"}) == 4);
  CHECK(s.value("tierd_node_hugetlb_free_pages", {"0", "fast", "2M"}) == 128);
  CHECK(s.has("tierd_node_hugetlb_pages", {"17", "slow", "2M"}));
  auto cap = [&](const char* c) { return s.value("tierd_kernel_capability_available", {c}); };
  CHECK(cap("thp") == 1);
  CHECK(cap("hugetlb_1g") == 1);
  CHECK(cap("memory_tiers") == 1);
  CHECK(cap("hmat") == 1);
  CHECK(cap("demotion") == 1);
  CHECK(cap("numa_balancing_tiering") == 1);
  CHECK(cap("damon_vaddr") == 1);
  CHECK(cap("damon_paddr") == 1);
  CHECK(cap("perf_sw_page_faults") == 1);
  CHECK(cap("perf_ibs") == 0);
  CHECK_FALSE(s.has("tierd_kernel_capability_available", {"perf_pebs"}));
  CHECK(cap("kernel_folio_copy_chunked") == 0);  // a stock kernel
  CHECK(cap("kernel_pages_stat_batched") == 0);

  t.caps.thpMode = "never";
  t.caps.numaBalancing = 1;
  t.memoryTiers = {{4, {0, 17}}};
  publishTopology(t, s);
  CHECK(cap("thp") == 0);
  CHECK(cap("numa_balancing_tiering") == 0);
  CHECK(cap("memory_tiers") == 0);

  t.caps.tierdKernel = topology::parseTierdKernelRelease("7.3.4-tierd1");
  publishTopology(t, s);
  CHECK(cap("kernel_folio_copy_chunked") == 1);
  CHECK(cap("kernel_pages_stat_batched") == 1);
  CHECK(cap("kernel_migrate_offload") == 0);
  CHECK(cap("kernel_migrate_offload_move_pages") == 0);
  CHECK(migrateOffloadCounters(t.caps).empty());

  // kernel-patches/ patch 3: the folder exists; tierd's moves are offloaded only with offload
  // enabled and move_pages(2)'s reason listed.
  topology::MigrateOffload m;
  m.enabled = true;
  m.reasons = {"numa_misplaced", "demotion", "damon"};
  m.batches = 3;
  m.bytes = 6ULL << 20;
  t.caps.migrateOffload = m;
  publishTopology(t, s);
  CHECK(cap("kernel_migrate_offload") == 1);
  CHECK(cap("kernel_migrate_offload_move_pages") == 0);
  CHECK(cap("kernel_migrate_offload_hugetlb") == 0);
  t.caps.migrateOffload->reasons.push_back("syscall_or_cpuset");
  publishTopology(t, s);
  CHECK(cap("kernel_migrate_offload_move_pages") == 1);
  // Unreadable counters (folios, fallbacks here) are left out, not exported as 0.
  CHECK(migrateOffloadCounters(t.caps) ==
        std::map<std::string, int64_t>{{"batches", 3}, {"bytes", 6 << 20}});
  // Patch 6: the hugetlb_folios counter exists, so hugetlb folios are offloaded too.
  t.caps.migrateOffload->hugetlbFolios = 1;
  publishTopology(t, s);
  CHECK(cap("kernel_migrate_offload_hugetlb") == 1);
  CHECK(migrateOffloadCounters(t.caps).at("hugetlb_folios") == 1);
}

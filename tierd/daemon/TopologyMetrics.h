#pragma once
/// \file
/// Publishes a topology snapshot (tierd/topology) as metrics: per memory node its capacity, use
/// and hugetlb pools with the node's tier, and the kernel capability flags the topology probes
/// know. The daemon calls it after each topology refresh. Flags that need a live probe by their
/// owner are not set here: perf_pebs (the PEBS sampler, when a precise event opens) and
/// move_pages (the migrator).

#include <cstdint>
#include <map>
#include <string>

#include "telemetry/metrics/MetricsSink.h"
#include "tierd/topology/Topology.h"

namespace tierd {

/// Sets tierd_node_capacity_bytes, tierd_node_used_bytes, tierd_node_hugetlb_pages,
/// tierd_node_hugetlb_free_pages for each node with memory (tier fast or slow), and
/// tierd_kernel_capability_available for thp, hugetlb_1g, memory_tiers, hmat, demotion,
/// numa_balancing_tiering, damon_sysfs, damon_vaddr, damon_paddr, perf_ibs, perf_sw_page_faults,
/// and tierd's kernel patches: kernel_folio_copy_chunked, kernel_pages_stat_batched (release tag),
/// kernel_migrate_offload (/sys/kernel/mm/migrate_offload/ exists) and
/// kernel_migrate_offload_move_pages (offload enabled for move_pages(2)'s reason).
void publishTopology(const topology::Topology& topo, telemetry::MetricsSink& sink);

/// The copy-offload counters of `caps` (totals since boot, from
/// /sys/kernel/mm/migrate_offload/counters/) keyed by file name ("batches", "folios", "bytes",
/// "fallbacks"), for DaemonMetrics::migrateOffload; empty on a kernel without patch 3, and
/// without the counters that could not be read.
std::map<std::string, int64_t> migrateOffloadCounters(const topology::Capabilities& caps);

}  // namespace tierd

#pragma once
/// \file
/// Publishes a topology snapshot (tierd/topology) as metrics: per memory node its capacity, use
/// and hugetlb pools with the node's tier, and the kernel capability flags the topology probes
/// know. The daemon calls it after each topology refresh. Flags that need a live probe by their
/// owner are not set here: perf_pebs (the PEBS sampler, when a precise event opens) and
/// move_pages (the migrator).

#include "telemetry/metrics/MetricsSink.h"
#include "tierd/topology/Topology.h"

namespace tierd {

/// Sets tierd_node_capacity_bytes, tierd_node_used_bytes, tierd_node_hugetlb_pages,
/// tierd_node_hugetlb_free_pages for each node with memory (tier fast or slow), and
/// tierd_kernel_capability_available for thp, hugetlb_1g, memory_tiers, hmat, demotion,
/// numa_balancing_tiering, damon_sysfs, damon_vaddr, damon_paddr, perf_ibs, perf_software.
void publishTopology(const topology::Topology& topo, telemetry::MetricsSink& sink);

}  // namespace tierd

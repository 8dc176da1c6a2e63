#pragma once
/// \file
/// Resident memory per NUMA node from a process's /proc/PID/numa_maps (as parseNumaMaps read
/// it): the figure behind a workload's per-node memory when its cgroup has no readable
/// memory.numa_stat. Pure; depends on tierd_core only.

#include <cstdint>
#include <map>
#include <vector>

#include "tierd/core/Types.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::sys {

/// Resident memory of a workload (or one process) on one NUMA node, bytes.
struct NodeMemory {
  uint64_t anon = 0;  ///< anonymous memory (numa_stat `anon`; numa_maps: mappings without a file,
                      ///< and hugetlb mappings)
  uint64_t file = 0;  ///< page cache and shmem (numa_stat `file`; numa_maps: file-backed mappings)
};

/// Resident bytes per node of one /proc/PID/numa_maps (pages present per node times
/// kernelpagesize_kB, `basePage` bytes without it): file-backed VMAs as file, the rest (hugetlb
/// included) as anon. Nodes with no page present are absent.
std::map<NodeId, NodeMemory> residentMemory(const std::vector<NumaMapsVma>& vmas,
                                            uint64_t basePage);

}  // namespace tierd::sys

#pragma once
/// \file
/// The types that cross module seams (docs/architecture.md, the seams): samples from
/// telemetry/hotness to policy, and planned moves from policy to tierd/migrate. Plain data, no
/// behaviour.

#include <sys/types.h>
#include <cstdint>
#include <vector>

namespace tierd {

/// NUMA node id as the kernel numbers it (may be sparse: 0, 1, 16, 17).
using NodeId = int;

/// One memory access observed by a HotnessSource (PEBS/IBS sample, DAMON region, replayed trace).
struct AccessSample {
  uint64_t timeNs = 0;      ///< CLOCK_MONOTONIC nanoseconds (perf sample time or drain time)
  pid_t pid = 0;            ///< process (tgid)
  pid_t tid = 0;            ///< thread; equals pid when unknown
  int cpu = -1;             ///< CPU that made the access, -1 when unknown (DAMON)
  uint64_t vaddr = 0;       ///< virtual address in `pid`'s address space; never 0 in a valid sample
  uint64_t weight = 1;      ///< access weight: load latency in cycles (PEBS/IBS) or access count
  uint64_t dataSource = 0;  ///< perf_mem_data_src bits (PERF_SAMPLE_DATA_SRC), 0 when unknown
};

/// Which way a move goes between tiers.
enum class Direction {
  Promote,  ///< slow tier -> fast tier
  Demote,   ///< fast tier -> slow tier
};

/// One planned move: a virtual address range of one process, to one node. `start` and `length`
/// are multiples of `pageSize`; the migrator passes one address per page of `pageSize` to
/// move_pages(2) (one per 2 MiB THP, one per hugetlb page, one per base page elsewhere).
struct MoveRange {
  pid_t pid = 0;
  uint64_t start = 0;   ///< bytes, virtual address
  uint64_t length = 0;  ///< bytes
  /// bytes: base page size, 2 MiB or 1 GiB; 0 = as the VMA is mapped. The base page size on THP
  /// memory asks for every base page address ([migration] page_granularity = "base").
  uint64_t pageSize = 0;
  NodeId target = -1;  ///< destination node
  Direction direction = Direction::Promote;
};

/// What a policy or the arbiter asks the migrator to do in one tick, in execution order.
struct MigrationPlan {
  std::vector<MoveRange> moves;
};

}  // namespace tierd

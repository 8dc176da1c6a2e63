#pragma once
/// \file
/// Where a process's memory lives, VMA by VMA: Migrator::locate()'s runs attributed back to the
/// VMAs they came from, by node and page kind (`tierctl locate`, docs/migrate.md).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tierd/core/Migration.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::migrate {

/// Bytes of one VMA (or a whole process) by node and page kind, plus bytes per negative status.
struct PageUsage {
  /// node -> page kind (pageKindName: "4k" and the like for base pages, "thp", or
  /// "hugetlb-2M"/"hugetlb-1G" from the VMA's KernelPageSize) -> bytes
  std::map<int, std::map<std::string, uint64_t>> nodes;
  std::map<std::string, uint64_t> absent;  ///< locateStatusKey(status) -> bytes
  /// Adds `o`'s bytes to these.
  void add(const PageUsage& o);
  /// Bytes on any node.
  uint64_t present() const;
};

/// The name of a negative locate status: "not_present" (-ENOENT), "no_page" (-EFAULT: no VMA,
/// zero page or special mapping), else the errno name ("EACCES"), or "E<n>" when it has none.
std::string locateStatusKey(int status);

/// Splits `loc`'s runs back onto `vmas` (ascending, the ranges located, in that order: runs are
/// in VMA order and may span adjacent VMAs). A present run is counted as hugetlb of the VMA's
/// KernelPageSize ("hugetlb-2M"), "thp" when its page size is `thp` (and thp != base), else as
/// base pages ("4k"; all spellings pageKindName). A VMA answered from numa_maps (all on one
/// node) holds its AnonHugePages as THP on that node: that many of its base-page bytes are
/// counted as "thp". One PageUsage per VMA.
std::vector<PageUsage> attributeRuns(const LocateResult& loc,
                                     const std::vector<sys::SmapsVma>& vmas, uint64_t base,
                                     uint64_t thp);

}  // namespace tierd::migrate

#include "tierd/migrate/LocateUsage.h"

#include <string.h>

#include <algorithm>
#include <cerrno>

#include "tierd/core/Units.h"

namespace tierd::migrate {

void PageUsage::add(const PageUsage& o) {
  for (const auto& [n, kinds] : o.nodes)
    for (const auto& [k, b] : kinds)
      nodes[n][k] += b;
  for (const auto& [k, b] : o.absent)
    absent[k] += b;
}

uint64_t PageUsage::present() const {
  uint64_t t = 0;
  for (const auto& [n, kinds] : nodes)
    for (const auto& [k, b] : kinds)
      t += b;
  return t;
}

std::string locateStatusKey(int s) {
  if (s == -ENOENT) return "not_present";
  if (s == -EFAULT) return "no_page";  // no VMA, zero page or special mapping
  const char* n = strerrorname_np(-s);
  return n ? n : "E" + std::to_string(-s);
}

std::vector<PageUsage> attributeRuns(const LocateResult& loc,
                                     const std::vector<sys::SmapsVma>& vmas, uint64_t base,
                                     uint64_t thp) {
  std::vector<PageUsage> perVma(vmas.size());
  size_t vi = 0;
  for (const auto& run : loc.runs) {
    uint64_t s = run.start;
    const uint64_t e = run.start + run.length;
    while (s < e && vi < vmas.size()) {
      if (vmas[vi].end <= s) {
        ++vi;
        continue;
      }
      const auto& v = vmas[vi];
      const uint64_t ce = std::min(e, v.end);
      PageUsage& u = perVma[vi];
      if (run.status >= 0) {
        std::string kind = v.hugetlb() ? pageKindName(PageKind::Hugetlb, v.kernelPageSize)
                           : run.pageSize == thp && thp != base
                               ? pageKindName(PageKind::Thp, thp)
                               : pageKindName(PageKind::Base, base);
        u.nodes[run.status][kind] += ce - s;
      } else {
        u.absent[locateStatusKey(run.status)] += ce - s;
      }
      s = ce;
    }
  }
  // A VMA answered from numa_maps (all on one node) holds its AnonHugePages as THP on that node.
  for (size_t i = 0; i < vmas.size(); ++i) {
    PageUsage& u = perVma[i];
    const std::string baseName = pageKindName(PageKind::Base, base);
    const std::string thpName = pageKindName(PageKind::Thp, thp);
    if (vmas[i].anonHugePages > 0 && u.nodes.size() == 1) {
      auto& kinds = u.nodes.begin()->second;
      uint64_t counted = kinds.count(thpName) ? kinds[thpName] : 0;
      if (counted < vmas[i].anonHugePages && kinds.count(baseName)) {
        uint64_t shift = std::min(kinds[baseName], vmas[i].anonHugePages - counted);
        kinds[baseName] -= shift;
        kinds[thpName] += shift;
        if (kinds[baseName] == 0) kinds.erase(baseName);
      }
    }
  }
  return perVma;
}

}  // namespace tierd::migrate

#include "tierd/sys/Residency.h"

namespace tierd::sys {

std::map<NodeId, NodeMemory> residentMemory(const std::vector<NumaMapsVma>& vmas,
                                            uint64_t basePage) {
  std::map<NodeId, NodeMemory> out;
  for (const NumaMapsVma& v : vmas) {
    const uint64_t psz = v.kernelPageSize ? v.kernelPageSize : basePage;
    const bool file = !v.file.empty() && !v.huge;
    for (const auto& [node, pages] : v.pagesPerNode)
      (file ? out[node].file : out[node].anon) += pages * psz;
  }
  return out;
}

}  // namespace tierd::sys

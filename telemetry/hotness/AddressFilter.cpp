#include "telemetry/hotness/AddressFilter.h"

#include <algorithm>

namespace tierd::telemetry {

bool AddressFilter::contains(pid_t pid, uint64_t addr, uint64_t nowNs) {
  if (addr == 0) return false;
  Entry& e = cache_[pid];
  if (e.readNs == 0 || nowNs - e.readNs >= refreshNs_) {
    auto maps = sys::readMaps(root_, pid);
    e.maps.clear();
    if (maps) e.maps = std::move(maps.value());
    e.readNs = nowNs == 0 ? 1 : nowNs;
  }
  auto it = std::upper_bound(e.maps.begin(), e.maps.end(), addr,
                             [](uint64_t a, const sys::SmapsVma& m) { return a < m.start; });
  if (it == e.maps.begin()) return false;
  --it;
  return addr >= it->start && addr < it->end;
}

}  // namespace tierd::telemetry

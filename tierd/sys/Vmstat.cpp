#include "tierd/sys/Vmstat.h"

#include "tierd/sys/Parsers.h"

namespace tierd::sys {

Result<std::map<std::string, int64_t>> readVmstat(const SysRoot& root) {
  auto text = root.read("/proc/vmstat");
  if (!text) return text.error();
  return parseKeyValue(text.value(), root.path("/proc/vmstat"));
}

}  // namespace tierd::sys

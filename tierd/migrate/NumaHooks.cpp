// libnuma's error hooks, overridden (numa(3): "numa_error() is a libnuma internal function that
// can be overridden by the user program"; numa_warn likewise). libnuma's own versions print to
// stderr and may exit the process (numa_exit_on_error / numa_exit_on_warn). tierd reports every
// failure through Result/Error at the call site instead, so these only count.
#include <numa.h>

#include <atomic>
#include <cstdint>

#include "tierd/migrate/Migrator.h"

namespace {
std::atomic<uint64_t> gHookCalls{0};
}  // namespace

extern "C" void numa_error(char* where) {
  (void)where;
  gHookCalls.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void numa_warn(int num, char* fmt, ...) {
  (void)num;
  (void)fmt;
  gHookCalls.fetch_add(1, std::memory_order_relaxed);
}

namespace tierd::migrate {
uint64_t libnumaHookCalls() {
  return gHookCalls.load(std::memory_order_relaxed);
}
}  // namespace tierd::migrate

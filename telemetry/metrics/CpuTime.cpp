#include "telemetry/metrics/CpuTime.h"

#include <sys/resource.h>

#include "tierd/core/Clock.h"

namespace tierd::telemetry {

double threadCpuSeconds() {
  return static_cast<double>(threadCpuNs()) * 1e-9;
}

double threadSystemCpuSeconds() {
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
  return static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) * 1e-6;
}

}  // namespace tierd::telemetry

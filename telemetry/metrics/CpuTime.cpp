#include "telemetry/metrics/CpuTime.h"

#include "tierd/core/Clock.h"

namespace tierd::telemetry {

double threadCpuSeconds() {
  return static_cast<double>(threadCpuNs()) * 1e-9;
}

Result<double> threadSystemCpuSeconds() {
  auto ns = threadSystemCpuNs();
  if (!ns) return ns.error();
  return static_cast<double>(*ns) * 1e-9;
}

}  // namespace tierd::telemetry

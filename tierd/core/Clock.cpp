#include "tierd/core/Clock.h"

#include <sys/resource.h>
#include <time.h>

namespace tierd {
namespace {

uint64_t clockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t monotonicNs() {
  return clockNs(CLOCK_MONOTONIC);
}

uint64_t threadCpuNs() {
  return clockNs(CLOCK_THREAD_CPUTIME_ID);
}

double processCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Result<uint64_t> threadSystemCpuNs() {
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) != 0)
    return Error::fromErrno("cannot read the thread's kernel CPU time", "getrusage(RUSAGE_THREAD)");
  return static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1'000'000'000u +
         static_cast<uint64_t>(ru.ru_stime.tv_usec) * 1000u;
}

}  // namespace tierd

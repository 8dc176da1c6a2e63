// The PMU path on this machine's own PMU: the events chooseHardwareEvents picks from the live
// /proc/cpuinfo and /sys/bus/event_source/devices (PEBS load latency and stores, or IBS op),
// opened by PerfSampler through LinuxPerfEventOpener on this process, with the drivers' real
// answers. Random loads over a buffer far larger than the last-level cache must come back as
// samples whose data addresses fall in the buffer, with a data source and a latency. Skipped
// (label hw) where there is no PMU tierd knows or perf_event_open is not permitted.

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <iostream>

#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/PmuEvents.h"
#include "tests/unit/support/Skip.h"
#include "tierd/core/Clock.h"

using namespace tierd;
using namespace tierd::telemetry;

TEST_CASE("the PMU's sampling events open here and sample this process's loads [hw]") {
  const sys::SysRoot& root = sys::SysRoot::live();
  auto cpu = readCpuId(root);
  REQUIRE(cpu.ok());
  auto pmus = readPmus(root);
  REQUIRE(pmus.ok());
  auto events = chooseHardwareEvents(cpu.value(), pmus.value(), {});
  if (!events.ok()) TIERD_SKIP("no PMU sampling here: " + events.error().describe());
  PerfSamplerConfig c;
  c.sourceName = "perf-hw-check";
  c.events = events.value();
  c.pid = ::getpid();
  c.period = 1009;  // aligned by PerfSampler where the driver wants it (IBS: 1008)
  c.cpuBudget = 1.0;
  LinuxPerfEventOpener opener;
  PerfSampler sampler(c, opener);
  auto started = sampler.start();
  if (!started.ok() && (started.error().code == EACCES || started.error().code == EPERM))
    TIERD_SKIP("perf_event_open refused here: " + started.error().describe());
  INFO((started.ok() ? std::string() : started.error().describe()));
  REQUIRE(started.ok());  // the driver took every attr tierd built for it

  const size_t bytes = size_t{512} << 20;  // far beyond any last-level cache
  auto* mem = static_cast<uint64_t*>(
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(mem != MAP_FAILED);
  const size_t n = bytes / sizeof(uint64_t);
  for (size_t i = 0; i < n; ++i)
    mem[i] = i;
  const uint64_t lo = reinterpret_cast<uint64_t>(mem);
  const uint64_t hi = lo + bytes;
  uint64_t samples = 0, inside = 0, withSource = 0, withLatency = 0, sum = 0;
  uint64_t x = 88172645463325252ull;
  const uint64_t until = monotonicNs() + 2'000'000'000ull;
  while (monotonicNs() < until) {
    for (int i = 0; i < 1 << 20; ++i) {  // xorshift: loads the prefetchers cannot follow
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      sum += mem[x % n];
    }
    auto batch = sampler.drain(monotonicNs());
    REQUIRE(batch.ok());
    for (const auto& s : batch.value()) {
      ++samples;
      if (s.vaddr >= lo && s.vaddr < hi) ++inside;
      if (s.dataSource != 0) ++withSource;
      if (s.weight > 1) ++withLatency;
    }
  }
  sampler.stop();
  ::munmap(mem, bytes);
  std::cout << "PMU sampling: events";
  for (const auto& e : c.events)
    std::cout << ' ' << e.name;
  std::cout << "; period " << sampler.period() << "; samples " << samples << ", in the buffer "
            << inside << ", with data source " << withSource << ", with latency " << withLatency
            << "; lost " << sampler.stats().lost << ", throttled " << sampler.stats().throttled
            << "; refused sample fields:";
  for (const auto& f : sampler.refusedSampleFields())
    std::cout << ' ' << f;
  std::cout << " (checksum " << sum << ")\n";
  REQUIRE(samples > 100);
  CHECK(static_cast<double>(inside) >= 0.5 * static_cast<double>(samples));
  CHECK(withSource > 0);
}

// The real perf_event path on this machine: PERF_COUNT_SW_PAGE_FAULTS with PERF_SAMPLE_ADDR on
// our own process, through LinuxPerfEventOpener, the mmap ring and PerfSampler's drain loop.
// Every first touch of a fresh anonymous page faults once, so with sample period 1 the sampled
// addresses must be exactly the pages we touched.

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <set>

#include "telemetry/hotness/PerfSampler.h"
#include "tests/unit/support/Skip.h"
#include "tierd/core/Clock.h"

using namespace tierd;
using namespace tierd::telemetry;

TEST_CASE("software page-fault sampling sees every first touch with its address [hw]") {
  PerfSamplerConfig c;
  c.sourceName = "perf-sw-page-faults";
  c.events = {pageFaultEvent()};
  c.pid = ::getpid();
  c.period = 1;
  c.sampleType =
      PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_ADDR;
  LinuxPerfEventOpener opener;
  PerfSampler sampler(c, opener);
  auto started = sampler.start();
  if (!started.ok() && (started.error().code == EACCES || started.error().code == EPERM)) {
    TIERD_SKIP("perf_event_open refused here: " + started.error().describe());
  }
  REQUIRE(started.ok());
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = 4096;
  auto* mem = static_cast<char*>(
      ::mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(mem != MAP_FAILED);
  ::madvise(mem, pages * page, MADV_NOHUGEPAGE);  // one fault per base page
  const uint64_t lo = reinterpret_cast<uint64_t>(mem);
  const uint64_t hi = lo + pages * page;
  std::set<uint64_t> seen;
  uint64_t outside = 0;
  auto collect = [&] {
    auto batch = sampler.drain(monotonicNs());
    REQUIRE(batch.ok());
    for (const auto& s : batch.value()) {
      CHECK(s.pid == ::getpid());
      CHECK(s.timeNs > 0);
      if (s.vaddr >= lo && s.vaddr < hi)
        seen.insert(s.vaddr & ~(page - 1));
      else
        ++outside;
    }
  };
  for (size_t i = 0; i < pages; ++i) {
    mem[i * page + 8] = static_cast<char>(i);  // first touch of page i at offset 8
    if (i % 256 == 255) collect();             // the ring holds far more than 256 samples
  }
  collect();
  sampler.stop();
  CHECK(sampler.stats().lost == 0);
  CHECK(seen.size() == pages);
  CHECK(*seen.begin() == lo);
  CHECK(*seen.rbegin() == hi - page);
  ::munmap(mem, pages * page);
}

TEST_CASE("drain on an idle ring returns an empty batch, not an error [hw]") {
  PerfSamplerConfig c;
  c.events = {pageFaultEvent()};
  c.pid = ::getpid();
  c.period = 1000000;
  c.sampleType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
  LinuxPerfEventOpener opener;
  PerfSampler sampler(c, opener);
  auto started = sampler.start();
  if (!started.ok() && (started.error().code == EACCES || started.error().code == EPERM)) {
    TIERD_SKIP("perf_event_open refused here: " + started.error().describe());
  }
  REQUIRE(started.ok());
  auto batch = sampler.drain(monotonicNs());
  REQUIRE(batch.ok());
  CHECK(batch->empty());
  CHECK(sampler.fdCount() >= 1);
}

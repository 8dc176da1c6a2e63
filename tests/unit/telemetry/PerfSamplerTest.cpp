#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "FakePerfEventOpener.h"
#include "TempTree.h"
#include "telemetry/hotness/PerfSampler.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {

// A fixture tree: 2 online CPUs, a perf_event cgroup, and pid 100's mappings.
void fillTree(const TempTree& t) {
  t.file("/sys/devices/system/cpu/online", "0-1\n");
  t.mkdir("/sys/fs/cgroup/perf_event/work");
  t.file("/proc/100/maps",
         "55d000000000-55d000021000 r-xp 00000000 08:01 1234 /usr/bin/gups\n"
         "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n");
}

PerfSamplerConfig cgroupConfig() {
  PerfSamplerConfig c;
  c.sourceName = "perf-test";
  c.events = {pageFaultEvent()};
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  c.period = 101;
  return c;
}

}  // namespace

TEST_CASE("cgroup mode opens one event per CPU with PERF_FLAG_PID_CGROUP and the attr we chose") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  PerfSampler s(cgroupConfig(), opener, sys::SysRoot(t.dir()));
  auto started = s.start();
  const std::string why = started.ok() ? std::string() : started.error().describe();
  INFO(why);
  REQUIRE(started.ok());
  REQUIRE(opener.opens.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& o = opener.opens[i];
    CHECK(o.cpu == static_cast<int>(i));
    CHECK(o.flags == PERF_FLAG_PID_CGROUP);
    CHECK(o.pid >= 0);  // the cgroup directory fd
    CHECK(o.attr.type == PERF_TYPE_SOFTWARE);
    CHECK(o.attr.config == PERF_COUNT_SW_PAGE_FAULTS);
    CHECK(o.attr.sample_period == 101);
    CHECK(o.attr.sample_type == kPreferredSampleType);
    CHECK(o.attr.disabled == 1);
    CHECK(o.attr.exclude_kernel == 1);
    CHECK(o.attr.use_clockid == 1);
    CHECK(o.attr.clockid == CLOCK_MONOTONIC);
    CHECK(o.attr.inherit == 0);
  }
  CHECK(s.fdCount() == 2);
  s.stop();
  const std::vector<std::string> tail(opener.log.end() - 6, opener.log.end());
  CHECK(tail == std::vector<std::string>{"disable 1000", "unmap", "close 1000", "disable 1001",
                                         "unmap", "close 1001"});
}

TEST_CASE("refused sample_type fields are dropped one at a time") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  opener.refuseSampleTypeBits = PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_WEIGHT_STRUCT;
  PerfSampler s(cgroupConfig(), opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  CHECK((s.sampleType() & PERF_SAMPLE_PHYS_ADDR) == 0);
  CHECK((s.sampleType() & PERF_SAMPLE_WEIGHT_STRUCT) == 0);
  CHECK((s.sampleType() & PERF_SAMPLE_WEIGHT) != 0);
  CHECK(opener.opens.at(0).attr.sample_type == s.sampleType());
}

TEST_CASE("drain merges rings, counts LOST/THROTTLE, discards unmapped or zero addresses") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  PerfSampler s(cgroupConfig(), opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  const uint64_t st = s.sampleType();
  SampleFields f;
  f.pid = 100;
  f.tid = 102;
  f.time = 50;
  f.addr = 0x7f0000001008;  // mapped
  f.cpu = 1;
  f.weight = 0;
  opener.rings[1]->write(sampleRecord(st, f));
  f.time = 10;
  f.addr = 0x7f0000200000;  // mapped, earlier time on the other CPU
  f.cpu = 0;
  opener.rings[0]->write(sampleRecord(st, f));
  f.addr = 0;  // address 0
  opener.rings[0]->write(sampleRecord(st, f));
  f.addr = 0x7f0000400000;  // just past the mapping
  opener.rings[0]->write(sampleRecord(st, f));
  f.pid = 999;  // a process that has gone (no maps)
  f.addr = 0x7f0000001000;
  opener.rings[0]->write(sampleRecord(st, f));
  f.pid = 100;
  f.time = 90;  // after `until`: stays queued
  f.addr = 0x55d000001000;
  opener.rings[1]->write(sampleRecord(st, f));
  opener.rings[0]->write(lostRecord(5));
  opener.rings[1]->write(throttleRecord());

  auto batch = s.drain(60);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 2);
  CHECK(batch->at(0).timeNs == 10);  // time-ordered across CPUs
  CHECK(batch->at(0).vaddr == 0x7f0000200000);
  CHECK(batch->at(0).cpu == 0);
  CHECK(batch->at(1).vaddr == 0x7f0000001008);
  CHECK(batch->at(1).pid == 100);
  CHECK(batch->at(1).tid == 102);
  CHECK(batch->at(1).weight == 1);  // no latency: one access
  CHECK(s.stats().lost == 5);
  CHECK(s.stats().throttled == 1);
  CHECK(s.stats().discarded == 3);
  CHECK(s.stats().samples == 2);
  auto later = s.drain(100);
  REQUIRE(later.ok());
  REQUIRE(later->size() == 1);
  CHECK(later->at(0).vaddr == 0x55d000001000);
  CHECK(s.stats().samples == 3);
}

TEST_CASE("collect() between drains empties the rings, so a burst larger than a ring is not lost") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  PerfSamplerConfig c = cgroupConfig();
  c.ringPages = 1;
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  SampleFields f;
  f.pid = 100;
  f.tid = 100;
  f.addr = 0x7f0000001000;
  const size_t perRing =
      opener.rings[0]->meta()->data_size / sampleRecord(s.sampleType(), f).size();
  // One ring's worth and a half in two bursts: a collect() after the first keeps every record.
  auto burst = [&](size_t n, uint64_t t0) {
    size_t written = 0;
    for (size_t i = 0; i < n; ++i) {
      f.time = t0 + i;
      written += opener.rings[0]->output(sampleRecord(s.sampleType(), f)) ? 1 : 0;
    }
    return written;
  };
  const size_t half = perRing * 3 / 4;
  CHECK(burst(half, 1) == half);
  REQUIRE(s.collect().ok());
  CHECK(burst(half, 100000) == half);
  auto batch = s.drain(UINT64_MAX);
  REQUIRE(batch.ok());
  CHECK(batch->size() == 2 * half);
  CHECK(s.stats().lost == 0);

  // Without it the ring fills: the kernel drops what does not fit and says so with a LOST record.
  CHECK(burst(half, 200000) == half);
  CHECK(burst(half, 300000) < half);
  auto lossy = s.drain(UINT64_MAX);
  REQUIRE(lossy.ok());
  CHECK(lossy->size() < 2 * half);
  CHECK(opener.rings[0]->output(sampleRecord(s.sampleType(), f)));  // space again: LOST first
  REQUIRE(s.drain(UINT64_MAX).ok());
  CHECK(s.stats().lost == 2 * half - lossy->size());
}

TEST_CASE("fd budget says what to raise") {
  CHECK(checkFdBudget(128, 1024, 10).ok());
  auto s = checkFdBudget(2 * 512, 1024, 10);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::Environment);
  CHECK(s.error().message.find("raise it to at least 1098") != std::string::npos);
  CHECK(s.error().message.find("LimitNOFILE") != std::string::npos);
}

TEST_CASE("sample period adapts to the CPU budget") {
  CHECK(adaptPeriod(1000, 0.02, 0.01, 1, 1u << 20) == 2000);   // over budget: halve the rate
  CHECK(adaptPeriod(1000, 0.001, 0.01, 1, 1u << 20) == 500);   // far under: double the rate
  CHECK(adaptPeriod(1000, 0.005, 0.01, 1, 1u << 20) == 1000);  // within: keep
  CHECK(adaptPeriod(1u << 20, 0.5, 0.01, 1, 1u << 20) == (1u << 20));
  CHECK(adaptPeriod(1, 0.0, 0.01, 1, 100) == 1);
}

TEST_CASE("a bad ring size is refused before anything is opened") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  auto c = cgroupConfig();
  c.ringPages = 3;
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  CHECK_FALSE(s.start().ok());
  CHECK(opener.opens.empty());
}

// The filter reads maps with the one /proc/PID/maps parser (tierd/sys/ProcMaps.h), which
// requires the kernel's ascending order.
TEST_CASE("/proc/PID/maps parsing is strict") {
  auto m = sys::parseMaps("55d0-55e0 r-xp 0 08:01 12 /bin/x y\n7f00-7f10 rw-p 00000000 00:00 0 \n",
                          "maps");
  REQUIRE(m.ok());
  REQUIRE(m->size() == 2);
  CHECK(m->at(1).start == 0x7f00);
  CHECK(m->at(1).path.empty());
  CHECK(m->at(0).path == "/bin/x y");
  auto bad = sys::parseMaps("7f10-7f00 rw-p 0 00:00 0\n", "maps");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().context == "maps:1");
}

TEST_CASE("pid mode opens every thread (cpu -1, no flags) and picks up new threads in drain") {
  TempTree t;
  fillTree(t);
  t.mkdir("/proc/100/task/100");
  t.mkdir("/proc/100/task/101");
  FakePerfEventOpener opener;
  PerfSamplerConfig c;
  c.events = {pageFaultEvent()};
  c.pid = 100;
  c.mapsRefreshNs = 0;  // rescan threads on every drain
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  REQUIRE(opener.opens.size() == 2);
  CHECK(opener.opens[0].pid == 100);
  CHECK(opener.opens[1].pid == 101);
  CHECK(opener.opens[0].cpu == -1);
  CHECK(opener.opens[0].flags == 0);
  CHECK(unsigned(opener.opens[0].attr.inherit) ==
        0);  // the kernel refuses mmap of inherit + cpu -1
  t.mkdir("/proc/100/task/102");
  REQUIRE(s.drain(0).ok());
  REQUIRE(opener.opens.size() == 3);
  CHECK(opener.opens[2].pid == 102);
  CHECK(opener.log.back() == "enable 1002");  // enabled at once, since sampling is running
  REQUIRE(s.drain(0).ok());
  CHECK(opener.opens.size() == 3);  // no thread opened twice
}

TEST_CASE("pid mode closes an exited thread's events after reading its last records") {
  TempTree t;
  fillTree(t);
  t.mkdir("/proc/100/task/100");
  t.mkdir("/proc/100/task/101");
  FakePerfEventOpener opener;
  PerfSamplerConfig c;
  c.events = {pageFaultEvent()};
  c.pid = 100;
  c.mapsRefreshNs = 0;
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  REQUIRE(s.openEvents() == 2);
  // Thread 101 writes one record, then exits.
  SampleFields f;
  f.pid = 100;
  f.tid = 101;
  f.time = 5;
  f.addr = 0x7f0000001000;
  opener.rings[1]->write(sampleRecord(s.sampleType(), f));
  std::filesystem::remove_all(t.dir() + "/proc/100/task/101");
  auto batch = s.drain(10);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 1);  // its last record still counts
  CHECK(batch->at(0).tid == 101);
  CHECK(s.openEvents() == 1);
  CHECK(std::count(opener.log.begin(), opener.log.end(), "close 1001") == 1);
  // Thread churn: a new thread is opened, and the count follows the live threads.
  t.mkdir("/proc/100/task/102");
  REQUIRE(s.drain(20).ok());
  CHECK(s.openEvents() == 2);
  std::filesystem::remove_all(t.dir() + "/proc/100/task/102");
  REQUIRE(s.drain(30).ok());
  CHECK(s.openEvents() == 1);
}

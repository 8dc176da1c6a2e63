#include <doctest/doctest.h>

#include "FakePerfEventOpener.h"
#include "telemetry/hotness/PerfRing.h"

using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {
constexpr uint64_t kType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                           PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC |
                           PERF_SAMPLE_PHYS_ADDR;
}

TEST_CASE("an empty ring drains to nothing and is normal") {
  FakeRing ring(1);
  PerfRing r(ring.base(), ring.length(), kType);
  std::vector<PerfSample> out;
  RingCounts counts;
  CHECK(r.drain(out, counts).ok());
  CHECK(out.empty());
  CHECK(counts.samples == 0);
}

TEST_CASE("samples are decoded field by field in the kernel's order") {
  FakeRing ring(1);
  SampleFields f;
  f.pid = 4242;
  f.tid = 4243;
  f.time = 123456789;
  f.addr = 0x7f0000201040;
  f.cpu = 1;
  f.weight = (uint64_t{0xbeef} << 32) | 350;  // var2_w/var3_w above var1_dw (latency 350)
  f.dataSrc = 0x68100142;
  f.phys = 0x12345000;
  ring.write(sampleRecord(kType, f));
  PerfRing r(ring.base(), ring.length(), kType);
  std::vector<PerfSample> out;
  RingCounts counts;
  REQUIRE(r.drain(out, counts).ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].ip == 0x401000);
  CHECK(out[0].pid == 4242);
  CHECK(out[0].tid == 4243);
  CHECK(out[0].timeNs == 123456789);
  CHECK(out[0].addr == 0x7f0000201040);
  CHECK(out[0].cpu == 1);
  CHECK(out[0].weight == 350);
  CHECK(out[0].dataSrc == 0x68100142);
  CHECK(out[0].physAddr == 0x12345000);
  CHECK(ring.meta()->data_tail == ring.meta()->data_head);  // consumed and published
}

TEST_CASE("plain WEIGHT keeps the whole u64") {
  const uint64_t t = PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT;
  FakeRing ring(1);
  SampleFields f;
  f.addr = 0x1000;
  f.weight = 0x100000005;
  ring.write(sampleRecord(t, f));
  PerfRing r(ring.base(), ring.length(), t);
  std::vector<PerfSample> out;
  RingCounts counts;
  REQUIRE(r.drain(out, counts).ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].weight == 0x100000005);
}

TEST_CASE("LOST and THROTTLE records are counted, others skipped") {
  FakeRing ring(1);
  ring.write(lostRecord(17));
  ring.write(throttleRecord());
  ring.write(throttleRecord(PERF_RECORD_UNTHROTTLE));
  ring.write(lostRecord(3));
  SampleFields f;
  f.addr = 0x2000;
  ring.write(sampleRecord(kType, f));
  PerfRing r(ring.base(), ring.length(), kType);
  std::vector<PerfSample> out;
  RingCounts counts;
  REQUIRE(r.drain(out, counts).ok());
  CHECK(counts.lost == 20);
  CHECK(counts.throttled == 1);
  CHECK(counts.other == 1);
  CHECK(counts.samples == 1);
}

TEST_CASE("a record split by the end of the data area is reassembled") {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Free-running offsets far past the first lap; 24 bytes before the end of the data area, so
  // the 8-byte header and part of the body sit at the end and the rest at the start.
  const uint64_t start = 3 * page - 24;
  FakeRing ring(1, start);
  SampleFields a, b;
  a.addr = 0x7f00000a0000;
  a.time = 1;
  b.addr = 0x7f00000b0000;
  b.time = 2;
  ring.write(sampleRecord(kType, a));
  ring.write(sampleRecord(kType, b));
  PerfRing r(ring.base(), ring.length(), kType);
  std::vector<PerfSample> out;
  RingCounts counts;
  REQUIRE(r.drain(out, counts).ok());
  REQUIRE(out.size() == 2);
  CHECK(out[0].addr == 0x7f00000a0000);
  CHECK(out[1].addr == 0x7f00000b0000);
  CHECK(out[1].timeNs == 2);
  CHECK(ring.meta()->data_tail == start + 2 * sampleRecord(kType, a).size());
  // Draining again yields nothing new.
  out.clear();
  REQUIRE(r.drain(out, counts).ok());
  CHECK(out.empty());
}

TEST_CASE("a malformed record is reported and the ring is skipped, not looped on") {
  FakeRing ring(1);
  // Header only (size 8): too short for the sample type; then a header claiming size 0.
  std::vector<uint8_t> headerOnly = {PERF_RECORD_SAMPLE, 0, 0, 0, 0, 0, 8, 0};
  ring.write(headerOnly);
  std::vector<uint8_t> zero(8, 0);
  ring.write(zero);
  PerfRing r(ring.base(), ring.length(), kType);
  std::vector<PerfSample> out;
  RingCounts counts;
  auto s = r.drain(out, counts);
  CHECK_FALSE(s.ok());
  CHECK(out.empty());
  CHECK(ring.meta()->data_tail == ring.meta()->data_head);
}

TEST_CASE("decodeSample refuses a body shorter than the layout") {
  std::vector<uint8_t> body(12, 0);
  CHECK_FALSE(decodeSample(body.data(), body.size(), kType).ok());
}

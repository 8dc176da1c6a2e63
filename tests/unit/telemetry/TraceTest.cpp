#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "TempTree.h"
#include "telemetry/hotness/Trace.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

TEST_CASE("a trace round-trips through text") {
  TraceHeader h;
  h.source = "perf-sw-page-faults";
  h.events = {"software/page-faults"};
  h.samplePeriod = 1;
  h.topology = "node0:cpus=0-1:mem=23GiB";
  std::vector<AccessSample> s(2);
  s[0] = {100, 42, 43, 1, 0x7f0000001000, 1, 0};
  s[1] = {200, 42, 42, -1, 0x7f0000201000, 350, 0x68100142};
  std::ostringstream out;
  writeTraceHeader(out, h);
  writeTraceSamples(out, s);
  auto t = parseTrace(out.str(), "mem");
  REQUIRE(t.ok());
  CHECK(t->header.source == h.source);
  CHECK(t->header.events == h.events);
  CHECK(t->header.samplePeriod == 1);
  CHECK(t->header.topology == h.topology);
  REQUIRE(t->samples.size() == 2);
  CHECK(t->samples[1].cpu == -1);
  CHECK(t->samples[1].vaddr == 0x7f0000201000);
  CHECK(t->samples[1].weight == 350);
  CHECK(t->samples[1].dataSource == 0x68100142);
}

TEST_CASE("trace errors name file and line") {
  CHECK(parseTrace("tierd-trace 2\n", "t").error().message.find("version 2") != std::string::npos);
  auto noHdr = parseTrace("tierd-trace 1\nsamples\n", "t");
  REQUIRE_FALSE(noHdr.ok());
  CHECK(noHdr.error().context == "t:2");
  auto bad = parseTrace(
      "tierd-trace 1\nsource x\nevents e\nsample_period 1\ntopology n\nsamples\n1 2 3 0 0x0 1 "
      "0x0\n",
      "t");
  REQUIRE_FALSE(bad.ok());  // address 0 is never a valid sample
  CHECK(bad.error().context == "t:7");
  CHECK_FALSE(parseTrace("tierd-trace 1\nsource x\n", "t").ok());  // truncated
}

TEST_CASE("the checked-in trace replays in time order up to `until`") {
  std::ifstream in(std::string(TIERD_FIXTURES) + "/traces/gups-sw-page-faults.trace");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = parseTrace(ss.str(), "gups-sw-page-faults.trace");
  REQUIRE(t.ok());
  CHECK(t->header.source == "perf-sw-page-faults");
  REQUIRE(t->samples.size() >= 10);
  const uint64_t mid = t->samples[t->samples.size() / 2].timeNs;
  const size_t total = t->samples.size();
  ReplaySource replay(std::move(t.value()));
  REQUIRE(replay.start().ok());
  auto first = replay.drain(mid);
  REQUIRE(first.ok());
  CHECK(!first->empty());
  for (const auto& s : first.value())
    CHECK(s.timeNs <= mid);
  auto rest = replay.drain(UINT64_MAX);
  REQUIRE(rest.ok());
  CHECK(first->size() + rest->size() == total);
  CHECK(replay.done());
  CHECK(replay.stats().samples == total);
}

TEST_CASE("topology fingerprint reads nodes, cpus and memory") {
  TempTree t;
  t.file("/sys/devices/system/node/online", "0-1\n");
  t.file("/sys/devices/system/node/node0/cpulist", "0-1\n");
  t.file("/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:       8388608 kB\n");
  t.file("/sys/devices/system/node/node1/cpulist", "\n");
  t.file("/sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:       4194304 kB\n");
  auto f = topologyFingerprint(sys::SysRoot(t.dir()));
  REQUIRE(f.ok());
  CHECK(f.value() == "node0:cpus=0-1:mem=8GiB;node1:cpus=:mem=4GiB");
}

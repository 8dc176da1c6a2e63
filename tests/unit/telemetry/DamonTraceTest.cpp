#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "FakeDamonFs.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/DamonTrace.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {

/// The kernel's text, as the rig's guests show it (tests/fixtures/damon/trace/).
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TIERD_FIXTURES) + "/damon/trace/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A trace_pipe line as 7.3 prints it for kdamond pid `pid`.
std::string line(pid_t pid, uint64_t nr, uint64_t start, uint64_t end, uint64_t acc,
                 uint64_t target = 0) {
  return "         kdamond.0-" + std::to_string(pid) + "     [001] .....    84.177004: " +
         "damon_aggregated: target_id=" + std::to_string(target) +
         " nr_regions=" + std::to_string(nr) + " " + std::to_string(start) + "-" +
         std::to_string(end) + ": " + std::to_string(acc) + " 3\n";
}

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBase = 0x7f0000000000;

/// The same three regions, as tried regions and as one aggregation of events of pid 4242 (the
/// fake kdamond's pid).
const std::vector<FakeRegion> kRegions = {
    {kBase, kBase + 3 * kMiB, 10, 1},
    {kBase + 3 * kMiB, kBase + 8 * kMiB, 0, 4},
    {kBase + 8 * kMiB, kBase + 9 * kMiB, 20, 2},
};

std::string aggregation(pid_t pid, const std::vector<FakeRegion>& regions) {
  std::string s;
  for (const auto& r : regions)
    s += line(pid, regions.size(), r.start, r.end, r.nrAccesses);
  return s;
}

DamonConfig traceConfig() {
  DamonConfig c;
  c.pid = 31337;
  c.snapshotNs = 1000;
  c.read = DamonReadPath::Tracepoint;
  return c;
}

bool logHas(const FakeDamonFs& fs, const std::string& entry) {
  return std::find(fs.log.begin(), fs.log.end(), entry) != fs.log.end();
}

}  // namespace

TEST_CASE("the damon_aggregated format of 7.3 and 6.12 is accepted, another is not") {
  CHECK(checkDamonAggregatedFormat(fixture("format-7.3"), "f").ok());
  CHECK(checkDamonAggregatedFormat(fixture("format-6.12"), "f").ok());
  std::string changed = fixture("format-7.3");
  changed.replace(changed.find("%lu-%lu"), 7, "%lx-%lx");
  auto s = checkDamonAggregatedFormat(changed, "f");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("another format") != std::string::npos);
  std::string noAge = fixture("format-7.3");
  noAge.replace(noAge.find(" age;"), 5, " aged;");
  CHECK_FALSE(checkDamonAggregatedFormat(noAge, "f").ok());
}

TEST_CASE("trace_pipe lines of 7.3 and 6.12 parse into events with the kdamond's pid") {
  for (const char* name : {"pipe-7.3", "pipe-6.12"}) {
    CAPTURE(name);
    uint64_t malformed = 0;
    auto events = parseDamonAggregated(fixture(name), &malformed);
    CHECK(malformed == 0);
    REQUIRE(events.size() >= 2);
    for (const auto& e : events) {
      CHECK(e.pid > 0);
      CHECK(e.targetId == 0);
      CHECK(e.region.start < e.region.end);
      CHECK(e.nrRegions >= 1);
    }
  }
  uint64_t malformed = 0;
  auto one = parseDamonAggregated(
      "# tracer: nop\n" + line(312, 3, 4096, 8192, 5) +
          "  <...>-77 (   77) [000] d..1.  9.0: damon_aggregated: target_id=1 nr_regions=9 "
          "8192-12288: 0 0\n" +
          "  kdamond.0-312 [001] .....  1.0: damon_aggregated: target_id=0 garbage\n" +
          "  kdamond.0-312 [001] .....  1.0: sched_switch: prev_comm=x\n" +
          line(312, 3, 12288, 16384, 7).substr(0, 100),
      &malformed);
  REQUIRE(one.size() == 2);
  CHECK(one[0].pid == 312);
  CHECK(one[0].nrRegions == 3);
  CHECK(one[0].region.start == 4096);
  CHECK(one[0].region.end == 8192);
  CHECK(one[0].region.nrAccesses == 5);
  CHECK(one[0].age == 3);
  CHECK(one[1].pid == 77);  // the "(TGID)" column of the record-tgid option
  CHECK(one[1].targetId == 1);
  CHECK(malformed == 2);  // the garbage line and the cut last line
}

TEST_CASE("the rig's captures: every complete aggregation, the partial one after it as tail") {
  // 7.3: aggregations of 22 and 24 regions, then 22 of 26 (kdamond pid 152); 6.12: 20 and 35,
  // then 13 of 33 (pid 191).
  struct Case {
    const char* file;
    pid_t pid;
    size_t first, last, tail;
  };
  for (const Case& c : {Case{"pipe-7.3", 152, 22, 24, 22}, Case{"pipe-6.12", 191, 20, 35, 13}}) {
    CAPTURE(c.file);
    const auto events = parseDamonAggregated(fixture(c.file));
    auto split = splitAggregations(events, c.pid, 0);
    REQUIRE(split.complete.size() == 2);
    CHECK(split.complete.front().size() == c.first);
    CHECK(split.complete.back().size() == c.last);
    CHECK(split.tail.size() == c.tail);
    for (const auto& regions : split.complete)
      for (size_t i = 1; i < regions.size(); ++i)
        CHECK(regions[i].start >= regions[i - 1].end);                // in address order
    CHECK(splitAggregations(events, c.pid + 1, 0).complete.empty());  // another kdamond's pid
  }
}

TEST_CASE("every complete aggregation is returned, oldest first, a partial one is kept as tail") {
  std::string text = aggregation(4242, {{0, 4096, 1, 0}, {4096, 8192, 2, 0}}) +
                     // another kdamond's events interleaved: filtered by pid
                     line(99, 2, 0, 4096, 9) +
                     aggregation(4242, {{0, 4096, 3, 0}, {4096, 12288, 4, 0}}) +
                     line(99, 2, 4096, 8192, 9) +
                     // the next aggregation, its second event not emitted yet
                     line(4242, 2, 0, 8192, 5);
  auto split = splitAggregations(parseDamonAggregated(text), 4242, 0);
  REQUIRE(split.complete.size() == 2);
  REQUIRE(split.complete[0].size() == 2);
  CHECK(split.complete[0][0].nrAccesses == 1);
  CHECK(split.complete[0][1].end == 8192);
  REQUIRE(split.complete[1].size() == 2);
  CHECK(split.complete[1][0].nrAccesses == 3);
  CHECK(split.complete[1][1].end == 12288);
  REQUIRE(split.tail.size() == 1);
  CHECK(split.tail[0].region.nrAccesses == 5);

  SUBCASE("the tail completes with the next read") {
    auto events = parseDamonAggregated(line(4242, 2, 8192, 16384, 6));
    events.insert(events.begin(), split.tail.begin(), split.tail.end());
    auto next = splitAggregations(events, 4242, 0);
    REQUIRE(next.complete.size() == 1);
    REQUIRE(next.complete[0].size() == 2);
    CHECK(next.complete[0][0].nrAccesses == 5);
    CHECK(next.complete[0][1].nrAccesses == 6);
    CHECK(next.tail.empty());
  }
  SUBCASE("an aggregation missing an event in the middle (lost to a full buffer) is skipped") {
    const std::string lost = line(4242, 3, 0, 4096, 1) + line(4242, 3, 8192, 12288, 1) +
                             aggregation(4242, {{0, 4096, 7, 0}}) + line(4242, 3, 0, 4096, 2);
    auto p = splitAggregations(parseDamonAggregated(lost), 4242, 0);
    REQUIRE(p.complete.size() == 1);
    CHECK(p.complete[0][0].nrAccesses == 7);
    CHECK(p.tail.size() == 1);
  }
  SUBCASE("another target's events do not count") {
    auto p = splitAggregations(parseDamonAggregated(line(4242, 1, 0, 4096, 1, 1)), 4242, 0);
    CHECK(p.complete.empty());
  }
}

TEST_CASE("tracepoint mode: an instance of our own filtered to our kdamond, no stat scheme") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  const std::string inst = "/sys/kernel/tracing/instances/tierd-4242";
  const std::string ev = inst + "/events/damon/damon_aggregated";
  CHECK(src.readPath() == DamonReadPath::Tracepoint);
  CHECK(src.traceInstance() == inst);
  CHECK(logHas(fs, "mkdir " + inst));
  CHECK(logHas(fs, inst + "/buffer_size_kb <- " + std::to_string(damonTraceBufferKb(1000))));
  CHECK(logHas(fs, ev + "/filter <- common_pid == 4242"));
  CHECK(logHas(fs, ev + "/enable <- 1"));
  CHECK_FALSE(logHas(fs, "0/contexts/0/schemes/nr_schemes <- 1"));
  // The host-wide event is never touched.
  CHECK(fs.readAttr("/sys/kernel/tracing/events/damon/damon_aggregated/enable").value() == "0");
  CHECK(src.state().find("read=tracepoint") != std::string::npos);

  src.stop();
  CHECK_FALSE(fs.exists(inst));
  CHECK(logHas(fs, ev + "/enable <- 0"));
  CHECK(logHas(fs, "rmdir " + inst));
}

TEST_CASE("tracepoint mode gives the same samples as the tried regions for the same regions") {
  FakeDamonFs triedFs;
  triedFs.regions = kRegions;
  DamonConfig triedConfig = traceConfig();
  triedConfig.read = DamonReadPath::TriedRegions;
  DamonSource tried(triedConfig, triedFs);
  REQUIRE(tried.start().ok());
  auto expected = tried.drain(5000);
  REQUIRE(expected.ok());
  REQUIRE_FALSE(expected.value().empty());

  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-6.12"));
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  // The aggregation, then the start of the next.
  fs.emit(aggregation(4242, kRegions) + line(4242, 3, kBase, kBase + 3 * kMiB, 99));
  auto got = src.drain(5000);
  REQUIRE(got.ok());
  REQUIRE(got.value().size() == expected.value().size());
  for (size_t i = 0; i < got.value().size(); ++i) {
    CAPTURE(i);
    CHECK(got.value()[i].vaddr == expected.value()[i].vaddr);
    CHECK(got.value()[i].weight == expected.value()[i].weight);
    CHECK(got.value()[i].pid == expected.value()[i].pid);
    CHECK(got.value()[i].timeNs == expected.value()[i].timeNs);
  }
  CHECK(src.accessRatio() == doctest::Approx(tried.accessRatio()));
  CHECK(fs.pipeReads == 1);
}

TEST_CASE("several aggregations in one read: each chunk weighs the mean of their estimates") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  // A mapping that begins 1 MiB into a 2 MiB chunk. Aggregation 1: one region over all of it;
  // aggregation 2: DAMON split it, the first part accessed in every check, the rest in none.
  const uint64_t begin = kBase + kMiB;
  fs.emit(aggregation(4242, {{begin, kBase + 4 * kMiB, 10, 0}}) +
          aggregation(4242, {{begin, kBase + 2 * kMiB, 20, 0},
                             {kBase + 2 * kMiB, kBase + 4 * kMiB, 0, 0}}));
  auto got = src.drain(5000);
  REQUIRE(got.ok());
  REQUIRE(got.value().size() == 2);
  const uint64_t checks = 100000 / 5000;  // aggr_us / sample_us of DamonConfig's defaults
  const double ten = damonAccessEstimate(10, checks), twenty = damonAccessEstimate(20, checks);
  // Chunk 0: 256 pages of the mapping in both aggregations; its sample at the mapping's start.
  CHECK(got.value()[0].vaddr == begin);
  CHECK(got.value()[0].weight ==
        static_cast<uint64_t>(std::llround((ten * 256 + twenty * 256) / 2)));
  // Chunk 1: accessed in the first aggregation only: half its estimate.
  CHECK(got.value()[1].vaddr == kBase + 2 * kMiB);
  CHECK(got.value()[1].weight == static_cast<uint64_t>(std::llround(ten * 512 / 2)));
  // Seen share over both: (3 MiB x 10/20 + 1 MiB x 20/20) / 6 MiB.
  CHECK(src.accessRatio() == doctest::Approx(2.5 / 6));
  CHECK(src.state().find("read=tracepoint aggregations=2") != std::string::npos);
  CHECK(src.state().find("regions=2 ") != std::string::npos);  // the last aggregation's
}

TEST_CASE("no complete aggregation yet: an empty batch, and asked again at the next drain") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  fs.emit(line(4242, 2, kBase, kBase + 2 * kMiB, 4));
  auto first = src.drain(5000);
  REQUIRE(first.ok());
  CHECK(first.value().empty());
  fs.emit(line(4242, 2, kBase + 2 * kMiB, kBase + 4 * kMiB, 4));
  auto second = src.drain(5001);  // before snapshotNs: asked anyway after an empty one
  REQUIRE(second.ok());
  CHECK(second.value().size() == 2);
}

TEST_CASE("no tracefs: tried regions instead, and state() says why") {
  FakeDamonFs fs;
  fs.regions = kRegions;
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.readPath() == DamonReadPath::TriedRegions);
  CHECK(logHas(fs, "0/contexts/0/schemes/nr_schemes <- 1"));
  auto got = src.drain(5000);
  REQUIRE(got.ok());
  CHECK_FALSE(got.value().empty());
  CHECK(src.state().find("read=tried_regions (tracepoint unavailable: ") != std::string::npos);
  CHECK(src.state().find("tracefs is not mounted") != std::string::npos);
}

TEST_CASE("an unexpected event format: tried regions instead, nothing created in tracefs") {
  FakeDamonFs fs;
  std::string other = fixture("format-7.3");
  other.replace(other.find("nr_regions=%u "), 14, "");
  fs.mountTracefs(other);
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.readPath() == DamonReadPath::TriedRegions);
  CHECK(fs.list("/sys/kernel/tracing/instances").value().empty());
  CHECK(src.state().find("another format") != std::string::npos);
}

TEST_CASE("the instance cannot be made after the kdamond is on: the stat scheme is committed") {
  struct NoMkdir : FakeDamonFs {
    Status makeDir(const std::string& abs) override {
      log.push_back("mkdir " + abs);
      return Error::sys(EACCES, "cannot mkdir", abs);
    }
  } fs;
  fs.mountTracefs(fixture("format-7.3"));
  fs.regions = kRegions;
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.readPath() == DamonReadPath::TriedRegions);
  CHECK(logHas(fs, "0/contexts/0/schemes/nr_schemes <- 1"));
  CHECK(fs.log.back() == "0/state <- commit");
  CHECK(fs.commits == 1);
  CHECK(src.state().find("read=tried_regions (tracepoint unavailable: ") != std::string::npos);
  auto got = src.drain(5000);
  REQUIRE(got.ok());
  CHECK_FALSE(got.value().empty());
}

TEST_CASE("a leftover instance of our name (a tierd that died) is removed and made again") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  fs.tree().file("/sys/kernel/tracing/instances/tierd-4242/x", "");
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  // The leftover of a dead tierd was ours by name: removed and made again.
  CHECK(logHas(fs, "rmdir /sys/kernel/tracing/instances/tierd-4242"));
  CHECK(src.readPath() == DamonReadPath::Tracepoint);
  CHECK_FALSE(fs.exists("/sys/kernel/tracing/instances/tierd-4242/x"));
}

TEST_CASE("stale tierd instances of dead kdamonds are removed, others are left alone") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  fs.tree().file("/sys/kernel/tracing/instances/tierd-99/buffer_size_kb", "7\n");
  fs.tree().file("/sys/kernel/tracing/instances/tierd-100/buffer_size_kb", "7\n");
  fs.tree().file("/proc/100/comm", "kdamond.1\n");  // another live kdamond's: not stale
  fs.tree().file("/sys/kernel/tracing/instances/someone/buffer_size_kb", "7\n");
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK_FALSE(fs.exists("/sys/kernel/tracing/instances/tierd-99"));
  CHECK(fs.exists("/sys/kernel/tracing/instances/tierd-100"));
  CHECK(fs.exists("/sys/kernel/tracing/instances/someone"));
  CHECK(fs.exists("/sys/kernel/tracing/instances/tierd-4242"));
}

TEST_CASE("no DAMON tracepoints in tracefs: tried regions instead") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"), "/sys/kernel/debug/tracing");
  std::filesystem::remove_all(fs.tree().dir() + "/sys/kernel/debug/tracing/events/damon");
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.readPath() == DamonReadPath::TriedRegions);
  CHECK(src.state().find("no damon:damon_aggregated event") != std::string::npos);
}

TEST_CASE("the debugfs mount of tracefs is used where /sys/kernel/tracing is not mounted") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"), "/sys/kernel/debug/tracing");
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.traceInstance() == "/sys/kernel/debug/tracing/instances/tierd-4242");
  src.stop();
  CHECK_FALSE(fs.exists("/sys/kernel/debug/tracing/instances/tierd-4242"));
}

TEST_CASE("the monitored process exits: the instance is removed at once") {
  FakeDamonFs fs;
  fs.mountTracefs(fixture("format-7.3"));
  DamonSource src(traceConfig(), fs);
  REQUIRE(src.start().ok());
  fs.processGone = true;
  auto got = src.drain(5000);
  REQUIRE(got.ok());
  CHECK(src.targetGone());
  CHECK_FALSE(fs.exists("/sys/kernel/tracing/instances/tierd-4242"));
}

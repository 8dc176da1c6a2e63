#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "FakeDamonFs.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/HeatRegions.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += l + "\n";
  return s;
}

std::string golden(const std::string& name) {
  std::ifstream in(std::string(TIERD_FIXTURES) + "/damon/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

DamonConfig config() {
  DamonConfig c;
  c.pid = 31337;
  c.snapshotNs = 1000;
  return c;
}

}  // namespace

TEST_CASE("someone else's kdamond: DAMON busy, and not a single write") {
  FakeDamonFs fs;
  fs.addForeignKdamond();
  fs.log.clear();
  auto probe = probeDamon(fs);
  CHECK(probe.present);
  CHECK_FALSE(probe.usable);
  CHECK(probe.why.rfind("DAMON busy: kdamond 0 is not ours (state on, operations paddr", 0) == 0);
  DamonSource src(config(), fs);
  auto s = src.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::Environment);
  CHECK(s.error().message.rfind("DAMON busy: kdamond 0 is not ours", 0) == 0);
  src.stop();
  CHECK(fs.log.empty());
}

TEST_CASE("start, one snapshot and stop write exactly the golden sequence") {
  FakeDamonFs fs;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  fs.regions = {
      {0x7f0000000000, 0x7f0000600000, 5, 3},  // 3 chunks, hot
      {0x7f0000600000, 0x7f0000700000, 0, 9},  // cold: no samples
      {0x7f0000700000, 0x7f0000900000, 2, 1},  // unaligned: 2 chunks, clipped start
  };
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 5);
  CHECK(batch->at(0).vaddr == 0x7f0000000000);
  CHECK(batch->at(2).vaddr == 0x7f0000400000);
  CHECK(batch->at(0).weight == 5);
  CHECK(batch->at(3).vaddr == 0x7f0000700000);
  CHECK(batch->at(4).vaddr == 0x7f0000800000);
  CHECK(batch->at(4).weight == 2);
  CHECK(batch->at(4).pid == 31337);
  CHECK(batch->at(4).timeNs == 5000);
  auto tooSoon = src.drain(5500);  // snapshotNs (1000) not yet passed: no sysfs traffic
  REQUIRE(tooSoon.ok());
  CHECK(tooSoon->empty());
  src.stop();
  CHECK(joined(fs.log) == golden("start-drain-stop.golden"));
  CHECK(fs.readAttr(std::string(FakeDamonFs::kRoot) + "/nr_kdamonds").value() == "0");
}

TEST_CASE("the monitored process exits: kdamond stopped itself, we still remove ours") {
  FakeDamonFs fs;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  fs.log.clear();
  fs.processGone = true;
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());
  CHECK(batch->empty());
  CHECK(src.targetGone());
  src.stop();
  CHECK(fs.log == std::vector<std::string>{"nr_kdamonds <- 0"});
}

TEST_CASE("a kdamond added by someone else after ours: stop leaves DAMON alone") {
  FakeDamonFs fs;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  fs.tree().file(std::string(FakeDamonFs::kRoot) + "/nr_kdamonds", "2\n");
  fs.log.clear();
  src.stop();
  CHECK(fs.log.empty());
}

TEST_CASE("no vaddr operations: ours is removed again and the reason names what exists") {
  FakeDamonFs fs;
  fs.availOperations = "paddr\n";
  DamonSource src(config(), fs);
  auto s = src.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::Unsupported);
  CHECK(s.error().message.find("available: paddr") != std::string::npos);
  CHECK(fs.log == std::vector<std::string>{"nr_kdamonds <- 1", "0/contexts/nr_contexts <- 1",
                                           "nr_kdamonds <- 0"});
}

TEST_CASE("explicit ranges are validated before anything is written") {
  FakeDamonFs fs;
  auto c = config();
  c.ranges = {{0x7f0000000000, 0x7f0000000000}};  // zero size: crashed kdamond on 6.12
  DamonSource src(c, fs);
  auto s = src.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("size 0") != std::string::npos);
  CHECK(fs.log.empty());
  CHECK_FALSE(validateDamonRanges({{0x1000, 0x1800}}, 4096).ok());                    // unaligned
  CHECK_FALSE(validateDamonRanges({{0x3000, 0x4000}, {0x1000, 0x2000}}, 4096).ok());  // unsorted
  CHECK(validateDamonRanges({{0x1000, 0x2000}, {0x2000, 0x4000}}, 4096).ok());
}

TEST_CASE("explicit ranges are written as regions") {
  FakeDamonFs fs;
  auto c = config();
  c.ranges = {{0x200000, 0x400000}};
  DamonSource src(c, fs);
  REQUIRE(src.start().ok());
  const std::string r = "0/contexts/0/targets/0/regions/";
  CHECK(std::find(fs.log.begin(), fs.log.end(), r + "nr_regions <- 1") != fs.log.end());
  CHECK(std::find(fs.log.begin(), fs.log.end(), r + "0/start <- 2097152") != fs.log.end());
  CHECK(std::find(fs.log.begin(), fs.log.end(), r + "0/end <- 4194304") != fs.log.end());
}

TEST_CASE("hot set scoring: top-K by heat against the truth regions") {
  auto truth = parseHotSet(
      "pid 7\n# hot chunks\n7f0000000000-7f0000400000\n0x7f0000a00000-0x7f0000c00000\n", "truth");
  REQUIRE(truth.ok());
  CHECK(truth->pid == 7);
  CHECK(truthRegions(truth.value()).size() == 3);
  RegionHeatMap heat{{0x7f0000000000, 50},
                     {0x7f0000200000, 40},
                     {0x7f0000600000, 30},
                     {0x7f0000a00000, 5},
                     {0x7f0000e00000, 1}};
  auto score = scoreHotSet(heat, truth.value());
  CHECK(score.actual == 3);
  CHECK(score.predicted == 3);
  CHECK(score.truePositive == 2);
  CHECK(score.precision == doctest::Approx(2.0 / 3));
  CHECK(score.recall == doctest::Approx(2.0 / 3));
  CHECK_FALSE(parseHotSet("7f00-7f10\n", "t").ok());         // no pid line
  CHECK_FALSE(parseHotSet("pid 1\n7f10-7f00\n", "t").ok());  // inverted
  CHECK(parseHotSet("pid 1\nzz-7f00\n", "t").error().context == "t:2");
}

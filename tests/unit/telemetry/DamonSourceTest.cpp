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

std::string hexRange(uint64_t start, uint64_t end) {
  std::ostringstream s;
  s << std::hex << start << "-" << end;
  return s.str();
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

TEST_CASE("vaddr support is read, never tried: avail_operations of a kdamond, else kallsyms") {
  FakeDamonFs fs;
  auto none = probeDamon(fs);  // no kdamond, no /proc/kallsyms
  CHECK(none.usable);
  CHECK(none.vaddr == "unknown");
  CHECK(none.vaddrEvidence.find("/proc/kallsyms") != std::string::npos);
  fs.tree().file("/proc/kallsyms",
                 "0000000000000000 T damon_va_check_accesses_not\n"
                 "0000000000000000 t damon_pa_check_accesses\n");
  CHECK(probeDamon(fs).vaddr == "no");
  fs.tree().file("/proc/kallsyms",
                 "0000000000000000 t damon_pa_check_accesses\n"
                 "0000000000000000 t damon_va_check_accesses\n"
                 "0000000000000000 t damon_va_update\n");
  auto yes = probeDamon(fs);
  CHECK(yes.vaddr == "yes");
  CHECK(yes.vaddrEvidence.find("has damon_va_check_accesses") != std::string::npos);
  CHECK(fs.log.empty());
  fs.addForeignKdamond();  // its avail_operations (paddr only) wins over kallsyms
  auto busy = probeDamon(fs);
  CHECK(busy.vaddr == "no");
  CHECK(busy.vaddrEvidence == "avail_operations of kdamond 0: paddr");
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
  CHECK(batch->at(0).weight == 5 * 512);  // nr_accesses x 4 KiB pages covered
  CHECK(batch->at(3).vaddr == 0x7f0000700000);
  CHECK(batch->at(4).vaddr == 0x7f0000800000);
  CHECK(batch->at(3).weight == 2 * 256);  // the region covers half of each of its chunks
  CHECK(batch->at(4).weight == 2 * 256);
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

TEST_CASE("a 2 MiB chunk split between regions gets each region's share, not each one in full") {
  FakeDamonFs fs;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  fs.regions = {
      {0x7f0000000000, 0x7f0000100000, 4, 1},  // first half of chunk 0
      {0x7f0000100000, 0x7f0000200000, 2, 1},  // second half of chunk 0
      {0x7f0000200000, 0x7f0000201000, 1, 1},  // one page of chunk 1
  };
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());
  RegionHeatMap heat;
  addSamples(heat, batch.value(), 31337, /*useWeight=*/true);
  REQUIRE(heat.size() == 2);
  CHECK(heat.at(0x7f0000000000) == 4 * 256 + 2 * 256);  // = a mean of 3 over the whole chunk
  CHECK(heat.at(0x7f0000200000) == 1);
}

TEST_CASE("hot regions: outliers above median + 3 x 1.4826 x MAD, whatever the truth's size") {
  RegionHeatMap heat;
  uint64_t region = 0x7f0000000000;
  auto add = [&](uint64_t h) {
    heat[region] = h;
    region += kHeatRegionBytes;
  };
  // The cold bulk (huge pages: cold still looks accessed), two rarely touched library regions
  // below it, and three hot regions above it.
  for (uint64_t h : {100, 101, 99, 102, 98, 100, 103, 97, 100, 101, 99, 100, 100, 98, 102})
    add(h);
  add(5);
  add(7);
  const uint64_t hot0 = region;
  add(160);
  add(150);
  add(155);
  auto cut = findHotRegions(heat);
  CHECK(cut.median == 100);
  CHECK(cut.mad == 2);
  CHECK(cut.outlierThreshold == doctest::Approx(100 + 3 * 1.4826 * 2));
  CHECK(cut.coldLevel == 100);
  CHECK(cut.hotLevel == 155);
  CHECK(cut.threshold == doctest::Approx((100 + 155) / 2.0));
  CHECK(cut.hot ==
        std::vector<uint64_t>{hot0, hot0 + kHeatRegionBytes, hot0 + 2 * kHeatRegionBytes});

  // Truth: two of the hot regions and one the heat does not show (a miss).
  auto truth = parseHotSet("pid 7\n# hot chunks\n" + hexRange(hot0, hot0 + 2 * kHeatRegionBytes) +
                               "\n" + hexRange(0x7f0000000000, 0x7f0000200000) + "\n",
                           "truth");
  REQUIRE(truth.ok());
  CHECK(truth->pid == 7);
  CHECK(truthRegions(truth.value()).size() == 3);
  auto score = scoreHotSet(heat, truth.value());
  CHECK(score.actual == 3);
  CHECK(score.predicted == 3);
  CHECK(score.truePositive == 2);
  CHECK(score.precision == doctest::Approx(2.0 / 3));
  CHECK(score.recall == doctest::Approx(2.0 / 3));
  // The cut does not depend on the truth: a one-region truth gets the same three predictions.
  auto one = parseHotSet("pid 7\n" + hexRange(hot0, hot0 + kHeatRegionBytes) + "\n", "truth");
  REQUIRE(one.ok());
  CHECK(scoreHotSet(heat, one.value()).predicted == 3);
  CHECK(scoreHotSet(heat, one.value()).precision == doctest::Approx(1.0 / 3));

  // A blurred neighbour (an outlier, but nearer the cold level) is not hot; the cut stays
  // above the outlier threshold even when the hot level is close to the bulk.
  heat[region] = 120;
  auto blurred = findHotRegions(heat);
  CHECK(blurred.outlierThreshold < 120);
  CHECK(blurred.hot.size() == 3);
  CHECK(blurred.threshold > 120);
  RegionHeatMap near{{0x200000, 100}, {0x400000, 98},  {0x600000, 102}, {0x800000, 96},
                     {0xa00000, 104}, {0xc00000, 100}, {0xe00000, 112}};
  auto nearCut = findHotRegions(near);
  CHECK(nearCut.outlierThreshold == doctest::Approx(100 + 3 * 1.4826 * 2));
  CHECK((nearCut.coldLevel + nearCut.hotLevel) / 2 == 106);  // below the outlier threshold
  CHECK(nearCut.threshold == doctest::Approx(nearCut.outlierThreshold));
  CHECK(nearCut.hot == std::vector<uint64_t>{0xe00000});

  // Nothing stands out (every region saturated): nothing is hot.
  RegionHeatMap flat{{0x200000, 20}, {0x400000, 20}, {0x600000, 20}, {0x800000, 20}};
  CHECK(findHotRegions(flat).hot.empty());
  CHECK(findHotRegions({}).hot.empty());

  CHECK_FALSE(parseHotSet("7f00-7f10\n", "t").ok());         // no pid line
  CHECK_FALSE(parseHotSet("pid 1\n7f10-7f00\n", "t").ok());  // inverted
  CHECK(parseHotSet("pid 1\nzz-7f00\n", "t").error().context == "t:2");
}

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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
  // 20 checks per aggregation (100 ms / 5 ms); estimate x 4 KiB pages covered:
  // -ln(1 - 5/20) x 20 = 5.754 accesses per aggregation, x 512 pages.
  CHECK(batch->at(0).weight == 2946);
  CHECK(batch->at(3).vaddr == 0x7f0000700000);
  CHECK(batch->at(4).vaddr == 0x7f0000800000);
  // The region covers half of each of its chunks: -ln(1 - 2/20) x 20 = 2.107, x 256 pages.
  CHECK(batch->at(3).weight == 539);
  CHECK(batch->at(4).weight == 539);
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
  CHECK_FALSE(src.kdamondPid().has_value());
  REQUIRE(src.start().ok());
  // Our kdamond's thread (whose CPU the sampler overhead metric counts).
  CHECK(src.kdamondPid() == 4242);
  fs.log.clear();
  fs.processGone = true;
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());
  CHECK(batch->empty());
  CHECK(src.targetGone());
  CHECK_FALSE(src.kdamondPid().has_value());
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
  // Each half weighs its own estimate x 256 pages: -ln(1 - 4/20) x 20 x 256 = 1142.4 and
  // -ln(1 - 2/20) x 20 x 256 = 539.4, not the whole chunk's 512 pages each; one sample of
  // their sum, rounded once.
  REQUIRE(batch->size() == 2);
  CHECK(heat.at(0x7f0000000000) == 1682);
  CHECK(heat.at(0x7f0000200000) == 1);  // one page: -ln(0.95) x 20 = 1.03 -> 1
}

TEST_CASE("access estimate: nr_accesses turned back into accesses per aggregation interval") {
  CHECK(damonAccessEstimate(0, 20) == 0);
  CHECK(damonAccessEstimate(3, 0) == 0);
  CHECK(damonAccessEstimate(10, 20) == doctest::Approx(20 * std::log(2.0)));
  // Seen in every check: the cap (checks - 0.5) / checks gives ln(2 x checks) x checks.
  CHECK(damonAccessEstimate(20, 20) == doctest::Approx(20 * std::log(40.0)));
  CHECK(damonAccessEstimate(25, 20) == damonAccessEstimate(20, 20));  // above checks: checks
  // Saturation undone: 19 vs 20 of 20 checks differ by 5%, their estimates by 23%.
  CHECK(damonAccessEstimate(20, 20) / damonAccessEstimate(19, 20) > 1.2);
  // Rare accesses: the estimate is about nr_accesses itself.
  CHECK(damonAccessEstimate(1, 1000) == doctest::Approx(1.0005).epsilon(1e-3));
  double prev = 0;
  for (uint64_t n = 1; n <= 50; ++n) {
    CHECK(damonAccessEstimate(n, 50) > prev);
    prev = damonAccessEstimate(n, 50);
  }
}

namespace {

DamonConfig adaptive() {
  DamonConfig c = config();
  c.adaptiveSampling = true;
  c.sampleUs = 2000;  // 50 checks per 100 ms aggregation
  c.minSampleUs = 500;
  c.maxSampleUs = 8000;
  return c;
}

const std::string kSampleUs =
    std::string(FakeDamonFs::kRoot) + "/0/contexts/0/monitoring_attrs/intervals/sample_us";

}  // namespace

TEST_CASE("adaptive sampling: saturated checks halve sample_us, idle ones double it, in bounds") {
  FakeDamonFs fs;
  DamonSource src(adaptive(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.state() == "sample_us=2000 tuning=tierd");
  // 1 MiB hot (50 of 50 checks) + 3 MiB at 40 of 50: 85% of the memory-weighted checks saw access.
  fs.regions = {{0x7f0000000000, 0x7f0000100000, 50, 1}, {0x7f0000100000, 0x7f0000400000, 40, 1}};
  REQUIRE(src.drain(5000).ok());
  CHECK(src.accessRatio() == doctest::Approx(0.85));
  CHECK(src.sampleUs() == 1000);
  CHECK(fs.commits == 1);
  CHECK(fs.committedSampleUs == "1000");  // written before `commit`, which reads it
  CHECK(src.state() == "sample_us=1000 access=85% regions=2 snapshots=1 empty=0 tuning=tierd");
  REQUIRE(src.drain(10000).ok());
  CHECK(src.sampleUs() == 500);
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 200, 1}};  // all of 200 checks at 500 us
  REQUIRE(src.drain(15000).ok());  // at the lower bound: no write, no commit
  CHECK(src.sampleUs() == 500);
  CHECK(fs.commits == 2);
  // Inside the band (5% .. 30%): nothing changes. Counts are against 200 checks at 500 us.
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 40, 1}};
  REQUIRE(src.drain(20000).ok());
  CHECK(src.accessRatio() == doctest::Approx(0.2));
  CHECK(fs.commits == 2);
  // Almost nothing seen: the interval doubles up to min(max_sample_us, aggr_us / 5).
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 0, 1}, {0x7f0000400000, 0x7f0000401000, 1, 1}};
  for (uint64_t t = 25000; t < 100000; t += 5000)
    REQUIRE(src.drain(t).ok());
  CHECK(src.sampleUs() == 8000);
  CHECK(fs.readAttr(kSampleUs).value() == "8000");
  CHECK(src.retunes() == 6);  // 2000 -> 1000 -> 500 -> 1000 -> 2000 -> 4000 -> 8000
  src.stop();
}

TEST_CASE("adaptive sampling: a kdamond that answers nothing two drains in a row is slowed down") {
  FakeDamonFs fs;
  DamonSource src(adaptive(), fs);
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 20, 1}};  // 40% of 50 checks: would halve
  fs.emptyAnswers = kTriedRegionsAttempts;                 // the first drain: nothing at all
  REQUIRE(src.drain(5000).ok());
  CHECK(src.sampleUs() == 2000);  // one empty drain changes nothing
  fs.emptyAnswers = kTriedRegionsAttempts;
  REQUIRE(src.drain(10000).ok());
  CHECK(src.sampleUs() == 4000);  // the second in a row doubles sample_us
  CHECK(fs.readAttr(kSampleUs).value() == "4000");
  fs.emptyAnswers = kTriedRegionsAttempts;
  REQUIRE(src.drain(15000).ok());
  CHECK(src.sampleUs() == 4000);   // the count starts again
  REQUIRE(src.drain(20000).ok());  // regions again: the ratio rules (20 of 25 checks: halve)
  CHECK(src.sampleUs() == 2000);
  fs.emptyAnswers = kTriedRegionsAttempts;
  REQUIRE(src.drain(25000).ok());
  CHECK(src.sampleUs() == 2000);  // one empty drain after a good one: not in a row
  src.stop();
}

TEST_CASE(
    "adaptive sampling: a failed commit stops tuning and leaves sample_us as the kernel has it") {
  FakeDamonFs fs;
  DamonSource src(adaptive(), fs);
  REQUIRE(src.start().ok());
  fs.failCommit = true;
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 50, 1}};
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());  // sampling goes on
  CHECK_FALSE(batch->empty());
  CHECK(src.sampleUs() == 2000);
  CHECK(fs.readAttr(kSampleUs).value() == "2000");
  CHECK(src.state().find("adaptive sampling off:") != std::string::npos);
  fs.failCommit = false;
  REQUIRE(src.drain(10000).ok());  // not retried
  CHECK(fs.commits == 0);
}

TEST_CASE(
    "a kernel with intervals_goal tunes the intervals itself: goal written, tuned pair read") {
  FakeDamonFs fs;
  fs.intervalsGoal = true;  // 6.15+
  DamonSource src(adaptive(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.kernelTuning());
  const std::string goal =
      std::string(FakeDamonFs::kRoot) + "/0/contexts/0/monitoring_attrs/intervals/intervals_goal/";
  CHECK(fs.readAttr(goal + "access_bp").value() == "1750");  // (5% + 30%) / 2
  CHECK(fs.readAttr(goal + "aggrs").value() == std::to_string(kIntervalsGoalAggrs));
  CHECK(fs.readAttr(goal + "min_sample_us").value() == "500");
  CHECK(fs.readAttr(goal + "max_sample_us").value() == "8000");
  // Written before `on`, which makes the kernel read them.
  const auto at = [&](const std::string& what) {
    return std::find_if(fs.log.begin(), fs.log.end(),
                        [&](const std::string& l) { return l.find(what) != std::string::npos; }) -
           fs.log.begin();
  };
  CHECK(at("intervals_goal/access_bp <- 1750") < at("0/state <- on"));
  CHECK(src.state() == "sample_us=2000 tuning=kernel");
  // The kernel doubled both intervals (their ratio, 50 checks, stays); a saturated snapshot is
  // read against the tuned pair and tierd writes no sample_us and no commit of its own.
  fs.tunedSampleUs = "4000";
  fs.tunedAggrUs = "200000";
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 50, 1}};
  auto batch = src.drain(5000);
  REQUIRE(batch.ok());
  CHECK(fs.tunedIntervalsUpdates == 1);
  CHECK(src.sampleUs() == 4000);
  CHECK(src.aggrUs() == 200000);
  CHECK(src.accessRatio() == doctest::Approx(1.0));
  CHECK(fs.commits == 0);
  CHECK(src.retunes() == 0);
  CHECK(fs.readAttr(kSampleUs).value() == "4000");
  CHECK(src.state() == "sample_us=4000 access=100% regions=1 snapshots=1 empty=0 tuning=kernel");
  src.stop();
}

TEST_CASE("adaptive sampling off on a kernel with intervals_goal: the goal stays unwritten") {
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  CHECK_FALSE(src.kernelTuning());
  for (const auto& l : fs.log)
    CHECK(l.find("intervals_goal") == std::string::npos);
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};
  REQUIRE(src.drain(5000).ok());
  CHECK(fs.tunedIntervalsUpdates == 0);
  CHECK(src.state() == "sample_us=5000 access=50% regions=1 snapshots=1 empty=0");
  src.stop();
}

TEST_CASE("adaptive sampling: inconsistent bounds are refused before anything is written") {
  FakeDamonFs fs;
  DamonConfig c = adaptive();
  c.minSampleUs = 9000;  // above max_sample_us
  DamonSource src(c, fs);
  auto s = src.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().kind == ErrorKind::Input);
  CHECK(fs.log.empty());
  DamonConfig band = adaptive();
  band.accessRatioHigh = band.accessRatioLow;
  DamonSource src2(band, fs);
  CHECK_FALSE(src2.start().ok());
  CHECK(fs.log.empty());
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

TEST_CASE("empty tried-regions answers: asked again at once, then at the next drain") {
  FakeDamonFs fs;
  DamonConfig c = config();
  c.snapshotNs = 1'000'000'000;
  DamonSource src(c, fs);
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000200000, 3, 1}};
  fs.emptyAnswers = kTriedRegionsAttempts - 1;  // the last attempt of this drain gets them
  auto first = src.drain(1'000'000'000);
  REQUIRE(first.ok());
  CHECK(first->size() == 1);
  fs.emptyAnswers = kTriedRegionsAttempts;  // every attempt of the next snapshot is empty
  auto empty = src.drain(2'000'000'000);
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  auto next = src.drain(2'100'000'000);  // 0.1 s later: retried, not a period later
  REQUIRE(next.ok());
  CHECK(next->size() == 1);
  auto soon = src.drain(2'200'000'000);  // after a real snapshot, snapshotNs applies again
  REQUIRE(soon.ok());
  CHECK(soon->empty());
  CHECK(src.state() == "sample_us=5000 access=15% regions=1 snapshots=2 empty=5");
}

namespace {

constexpr uint64_t kSec = 1'000'000'000;

// A fixed 5 ms interval (bound: min(max_sample_us 20 ms, aggr_us / 5 = 20 ms)) under a budget of
// 1% of a core, measured per second; drain() itself costs nothing (a fake thread clock).
DamonConfig budgeted(DamonConfig c = config()) {
  c.cpuBudget = 0.01;
  c.budgetWindowNs = kSec;
  c.clockTicksPerSecond = 100;
  c.threadCpuNs = [] { return uint64_t{0}; };
  return c;
}

// /proc/4242/stat of the fake's kdamond (its `pid` file says 4242): utime `ticks`, stime 0.
void kdamondTicks(FakeDamonFs& fs, uint64_t ticks) {
  fs.tree().file("/proc/4242/stat", "4242 (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 " +
                                        std::to_string(ticks) + " 0 0 0 20 0 1 0 100 0 0\n");
}

// The production path on 7.3 with settling: the kernel tunes the intervals (set
// fs.intervalsGoal), the budget is `cpuBudget`, the settled one 1%, the bound 80 ms.
DamonConfig settledConfig(double cpuBudget) {
  DamonConfig c = budgeted(adaptive());
  c.cpuBudget = cpuBudget;
  c.settledCpuBudget = 0.01;
  c.maxSampleUs = 80000;
  return c;
}

// Starts `src` over one 4 MiB region seen accessed `accesses` times (of 50 checks at 2 ms /
// 100 ms) and drains it once at 1 s with the kdamond's CPU at 0.
void startOneRegion(DamonSource& src, FakeDamonFs& fs, uint64_t accesses) {
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, accesses, 1}};
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());
}

const std::string kAggrUs =
    std::string(FakeDamonFs::kRoot) + "/0/contexts/0/monitoring_attrs/intervals/aggr_us";
const std::string kGoalMin =
    std::string(FakeDamonFs::kRoot) +
    "/0/contexts/0/monitoring_attrs/intervals/intervals_goal/min_sample_us";

}  // namespace

TEST_CASE("a kdamond over the CPU budget samples half as often, up to its bound, then recovers") {
  FakeDamonFs fs;
  DamonSource src(budgeted(), fs);
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 5, 1}};
  kdamondTicks(fs, 1000);
  REQUIRE(src.drain(1 * kSec).ok());  // the first window begins
  CHECK(src.cpuRatio() < 0);
  CHECK(fs.commits == 0);
  kdamondTicks(fs, 1050);  // 0.5 s of kdamond CPU in 1 s: 50% of a core
  REQUIRE(src.drain(2 * kSec).ok());
  CHECK(src.cpuRatio() == doctest::Approx(0.5));
  CHECK(src.sampleUs() == 10000);
  CHECK(fs.committedSampleUs == "10000");
  CHECK(src.stats().budgetBackoffs == 1);
  CHECK(src.state() ==
        "sample_us=10000 access=25% regions=1 snapshots=2 empty=0 cpu=50.0% of 1.0% "
        "sample_us>=10000 backoffs=1");
  kdamondTicks(fs, 1100);
  REQUIRE(src.drain(3 * kSec).ok());
  CHECK(src.sampleUs() == 20000);
  CHECK(src.stats().budgetBackoffs == 2);
  // At the bound and still over: nothing left to lengthen, and it is said.
  kdamondTicks(fs, 1150);
  REQUIRE(src.drain(4 * kSec).ok());
  CHECK(src.sampleUs() == 20000);
  CHECK(fs.commits == 2);
  CHECK(src.stats().budgetBackoffs == 2);
  CHECK(src.state().find("(over the CPU budget at the longest sample interval, 20000 us)") !=
        std::string::npos);
  // Inside a window nothing is measured or changed, whatever the kdamond used.
  kdamondTicks(fs, 5000);
  REQUIRE(src.drain(4 * kSec + kSec / 2).ok());
  CHECK(fs.commits == 2);
  // Under a quarter of the budget (0.2%): the floor halves per window, back to the configured.
  kdamondTicks(fs, 5000);
  REQUIRE(src.drain(6 * kSec).ok());  // this window still holds the burst: 3850 ticks
  kdamondTicks(fs, 5000);
  REQUIRE(src.drain(7 * kSec).ok());
  CHECK(src.cpuRatio() == doctest::Approx(0.0));
  CHECK(src.sampleUs() == 10000);
  kdamondTicks(fs, 5000);
  REQUIRE(src.drain(8 * kSec).ok());
  CHECK(src.sampleUs() == 5000);
  CHECK(src.budgetFloorUs() == 0);
  CHECK(fs.readAttr(kSampleUs).value() == "5000");
  CHECK(src.stats().budgetBackoffs == 2);  // coming back is not a back-off
  src.stop();
}

TEST_CASE("adaptive sampling never samples faster than the CPU budget's floor") {
  FakeDamonFs fs;
  DamonSource src(budgeted(adaptive()), fs);  // 2 ms, tuned between 500 us and 8 ms
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};  // 10 of 50 checks: in the band
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());
  kdamondTicks(fs, 50);
  REQUIRE(src.drain(2 * kSec).ok());
  CHECK(src.sampleUs() == 4000);
  // Saturated checks would halve sample_us, but not under the floor; still over: 8 ms.
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 20, 1}};
  kdamondTicks(fs, 100);
  REQUIRE(src.drain(3 * kSec).ok());
  CHECK(src.sampleUs() == 8000);
  CHECK(src.budgetFloorUs() == 8000);
  // The kdamond is idle now: the floor halves, and adaptive sampling follows it down.
  REQUIRE(src.drain(4 * kSec).ok());
  CHECK(src.budgetFloorUs() == 4000);
  CHECK(src.sampleUs() == 8000);
  REQUIRE(src.drain(5 * kSec).ok());
  CHECK(src.sampleUs() == 4000);
  CHECK(src.stats().budgetBackoffs == 2);
  src.stop();
}

TEST_CASE("where the kernel tunes the intervals, the CPU budget raises its min_sample_us") {
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonSource src(budgeted(adaptive()), fs);
  REQUIRE(src.start().ok());
  REQUIRE(src.kernelTuning());
  CHECK(fs.readAttr(kGoalMin).value() == "500");
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());
  kdamondTicks(fs, 30);
  REQUIRE(src.drain(2 * kSec).ok());
  CHECK(fs.readAttr(kGoalMin).value() == "4000");  // twice the 2 ms the kernel tuned to
  CHECK(fs.commits == 1);
  // The kernel refuses sample_us below min_sample_us: the tuned pair moves up with the floor,
  // keeping its checks per aggregation.
  CHECK(fs.committedSampleUs == "4000");
  CHECK(fs.readAttr(kAggrUs).value() == "200000");
  CHECK(src.sampleUs() == 4000);
  CHECK(src.stats().budgetBackoffs == 1);
  kdamondTicks(fs, 30);
  REQUIRE(src.drain(3 * kSec).ok());
  CHECK(fs.readAttr(kGoalMin).value() == "2000");
  src.stop();
}

TEST_CASE("where the kernel tunes, the CPU budget backs off up to a max_sample_us above 20 ms") {
  // sampling.max_sample_interval = 80 ms: the kernel's tuning bound and the budget's.
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonConfig c = budgeted(adaptive());
  c.maxSampleUs = 80000;
  DamonSource src(c, fs);
  REQUIRE(src.start().ok());
  const std::string goalMax =
      std::string(FakeDamonFs::kRoot) +
      "/0/contexts/0/monitoring_attrs/intervals/intervals_goal/max_sample_us";
  CHECK(fs.readAttr(goalMax).value() == "80000");
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());
  // 50% of a core in every window, against 1%: 2 ms doubles to 4, 8, 16, 32, 64, then 80 ms.
  for (uint64_t second = 2; second <= 8; ++second) {
    kdamondTicks(fs, 50 * (second - 1));
    REQUIRE(src.drain(second * kSec).ok());
  }
  CHECK(src.sampleUs() == 80000);
  CHECK(src.budgetFloorUs() == 80000);
  CHECK(fs.readAttr(kGoalMin).value() == "80000");
  CHECK(fs.committedSampleUs == "80000");
  // The tuned pair moved up together: 50 checks per aggregation, as at 2 ms / 100 ms.
  CHECK(fs.readAttr(kAggrUs).value() == "4000000");
  CHECK(src.stats().budgetBackoffs == 6);
  CHECK(src.state().find("(over the CPU budget at the longest sample interval, 80000 us)") !=
        std::string::npos);
  src.stop();
}

TEST_CASE("a settled kdamond is held to the settled budget and samples as before once unsettled") {
  // The production path on 7.3: the kernel tunes the intervals; tests/vm/config/tierd-gups.toml's
  // budget of 100% is never over, the settled budget of 1% is.
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonSource src(settledConfig(1.0), fs);
  startOneRegion(src, fs, 10);
  kdamondTicks(fs, 50);  // 50% of a core: under 100%
  REQUIRE(src.drain(2 * kSec).ok());
  CHECK(fs.commits == 0);
  CHECK(src.sampleUs() == 2000);
  src.setSettled(true);
  src.setSettled(true);  // told every tick: the same value changes nothing
  CHECK(src.settled());
  kdamondTicks(fs, 100);
  REQUIRE(src.drain(3 * kSec).ok());  // a new window: the last was measured under 100%
  CHECK(fs.commits == 0);
  // 50% against 1%: 2 ms doubles to 4, 8, 16, 32, 64, then the 80 ms bound.
  for (uint64_t second = 4; second <= 9; ++second) {
    kdamondTicks(fs, 50 * (second - 1));
    REQUIRE(src.drain(second * kSec).ok());
  }
  CHECK(src.sampleUs() == 80000);
  CHECK(fs.readAttr(kAggrUs).value() == "4000000");
  CHECK(fs.readAttr(kGoalMin).value() == "80000");
  CHECK(src.state().find(" settled cpu=50.0% of 1.0% sample_us>=80000 backoffs=6") !=
        std::string::npos);
  const int commits = fs.commits;
  // Unsettled: the intervals from before the back-off, in one commit, and no floor.
  src.setSettled(false);
  CHECK(fs.commits == commits + 1);
  CHECK(fs.committedSampleUs == "2000");
  CHECK(fs.readAttr(kAggrUs).value() == "100000");
  CHECK(fs.readAttr(kGoalMin).value() == "500");
  CHECK(src.sampleUs() == 2000);
  CHECK(src.budgetFloorUs() == 0);
  CHECK(src.state().find("settled") == std::string::npos);
  // 50% is under the unsettled budget again: nothing backs off.
  for (uint64_t second = 10; second <= 12; ++second) {
    kdamondTicks(fs, 50 * (second - 1));
    REQUIRE(src.drain(second * kSec).ok());
  }
  CHECK(fs.commits == commits + 1);
  CHECK(src.sampleUs() == 2000);
  src.stop();
}

TEST_CASE("the settled budget lengthens no interval once half the checks see an access") {
  // In the rig a settled kdamond at 20 ms saw 76-84% of gups's checks accessed, DAMON merged its
  // regions and the heat model ranked nothing hot: the saving is not worth the contrast.
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonSource src(settledConfig(1.0), fs);
  startOneRegion(src, fs, 30);  // 30 of 50 checks: 60%
  src.setSettled(true);
  for (uint64_t second = 2; second <= 6; ++second) {
    kdamondTicks(fs, 50 * (second - 1));  // 50% of a core: over 1%, under 100%
    REQUIRE(src.drain(second * kSec).ok());
  }
  CHECK(fs.commits == 0);
  CHECK(src.sampleUs() == 2000);
  CHECK(src.budgetFloorUs() == 0);
  CHECK(src.state().find(" settled cpu=50.0% of 1.0% (settled back-off held: access at or "
                         "above 50%)") != std::string::npos);
  // Contrast back (10 of 50 checks): the settled budget backs off again.
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};
  kdamondTicks(fs, 50 * 6);
  REQUIRE(src.drain(7 * kSec).ok());
  CHECK(src.sampleUs() == 4000);
  CHECK(src.state().find("held") == std::string::npos);
  src.stop();
}

TEST_CASE("over the unsettled budget a settled kdamond backs off whatever its access ratio") {
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  DamonSource src(settledConfig(0.3), fs);
  startOneRegion(src, fs, 30);  // 60%
  src.setSettled(true);
  kdamondTicks(fs, 50);
  REQUIRE(src.drain(2 * kSec).ok());  // opens the settled window
  kdamondTicks(fs, 100);
  REQUIRE(src.drain(3 * kSec).ok());  // 50% of a core: over 30% too
  CHECK(src.sampleUs() == 4000);
  CHECK(src.budgetFloorUs() == 4000);
  src.stop();
}

TEST_CASE("without a settled budget, settling changes nothing") {
  FakeDamonFs fs;
  DamonSource src(config(), fs);  // no budget at all
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 5, 1}};
  src.setSettled(true);
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());
  kdamondTicks(fs, 100);  // a whole core
  REQUIRE(src.drain(2 * kSec).ok());
  CHECK(fs.commits == 0);
  CHECK(src.sampleUs() == 5000);
  CHECK(src.state() == "sample_us=5000 access=25% regions=1 snapshots=2 empty=0");
  src.setSettled(false);
  CHECK(fs.commits == 0);
  src.stop();
}

TEST_CASE("a kernel with contexts/0/pause: the kdamond pauses and resumes by commit") {
  // 7.3 in the rig: the kernel tunes the intervals, the context has a pause file.
  FakeDamonFs fs;
  fs.intervalsGoal = true;
  fs.pauseFile = true;
  fs.tunedSampleUs = "4000";
  fs.tunedAggrUs = "200000";
  DamonSource src(settledConfig(1.0), fs);
  REQUIRE(src.start().ok());
  CHECK(src.pauseLeadNs() == 300'000'000);  // three aggregations of 100 ms
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 10, 1}};
  kdamondTicks(fs, 0);
  REQUIRE(src.drain(1 * kSec).ok());  // reads the tuned pair: 4 ms / 200 ms
  CHECK(src.pauseLeadNs() == 600'000'000);
  size_t mark = fs.log.size();
  REQUIRE(src.setPaused(true).ok());
  // The tuned pair read back before the commit, which re-reads both interval files.
  CHECK(joined({fs.log.begin() + static_cast<std::ptrdiff_t>(mark), fs.log.end()}) ==
        "0/state <- update_tuned_intervals\n0/contexts/0/pause <- Y\n0/state <- commit\n");
  CHECK(fs.committedPause == "Y");
  CHECK(fs.committedSampleUs == "4000");
  CHECK(src.paused());
  CHECK(src.state().find(" pauses=1 paused") != std::string::npos);
  mark = fs.log.size();
  REQUIRE(src.setPaused(true).ok());  // idempotent: nothing written
  CHECK(fs.log.size() == mark);
  REQUIRE(src.setPaused(false).ok());
  CHECK(joined({fs.log.begin() + static_cast<std::ptrdiff_t>(mark), fs.log.end()}) ==
        "0/contexts/0/pause <- N\n0/state <- commit\n");
  CHECK(fs.committedPause == "N");
  CHECK_FALSE(src.paused());
  CHECK(src.pauses() == 1);
  CHECK(src.state().find(" pauses=1") != std::string::npos);
  CHECK(src.state().find("paused") == std::string::npos);
  src.stop();
  mark = fs.log.size();
  CHECK(src.setPaused(true).ok());  // no kdamond: nothing to pause, nothing written
  CHECK_FALSE(src.paused());
  CHECK(fs.log.size() == mark);
}

TEST_CASE("without contexts/0/pause a DAMON source cannot pause and writes nothing for it") {
  FakeDamonFs fs;  // 6.12: no pause file
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  CHECK(src.pauseLeadNs() == 0);
  const size_t mark = fs.log.size();
  auto st = src.setPaused(true);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().kind == ErrorKind::Unsupported);
  CHECK(fs.log.size() == mark);
  CHECK_FALSE(src.paused());
  CHECK(src.setPaused(false).ok());
  src.stop();
}

TEST_CASE("a failed pause leaves sampling on, a failed resume is retried by the next drain") {
  FakeDamonFs fs;
  fs.pauseFile = true;
  DamonSource src(config(), fs);
  REQUIRE(src.start().ok());
  const std::string pause = std::string(FakeDamonFs::kRoot) + "/0/contexts/0/pause";
  fs.failCommit = true;
  REQUIRE_FALSE(src.setPaused(true).ok());
  CHECK_FALSE(src.paused());
  CHECK(fs.readAttr(pause).value() == "N");  // the file as the kernel still runs it
  CHECK(src.state().find("(pause failed: ") != std::string::npos);
  fs.failCommit = false;
  REQUIRE(src.setPaused(true).ok());
  CHECK(fs.committedPause == "Y");
  CHECK(src.state().find("failed") == std::string::npos);
  fs.failCommit = true;
  REQUIRE_FALSE(src.setPaused(false).ok());
  CHECK(src.paused());
  CHECK(src.state().find("(resume failed: ") != std::string::npos);
  // Still failing: the drain says so instead of reading a paused kdamond's nothing.
  CHECK_FALSE(src.drain(1 * kSec).ok());
  fs.failCommit = false;
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 5, 1}};
  auto batch = src.drain(2 * kSec);
  REQUIRE(batch.ok());
  CHECK(fs.committedPause == "N");
  CHECK_FALSE(src.paused());
  CHECK(batch->size() == 2);
  src.stop();
}

TEST_CASE("the CPU budget: unmeasurable is said, without a budget nothing is read") {
  FakeDamonFs fs;
  DamonSource src(budgeted(), fs);
  REQUIRE(src.start().ok());
  fs.regions = {{0x7f0000000000, 0x7f0000400000, 5, 1}};
  REQUIRE(src.drain(1 * kSec).ok());  // no /proc/4242/stat
  CHECK(src.state().find("(kdamond CPU unreadable: ") != std::string::npos);
  CHECK(fs.commits == 0);
  src.stop();

  FakeDamonFs quiet;
  DamonSource unbudgeted(config(), quiet);  // cpuBudget 0
  REQUIRE(unbudgeted.start().ok());
  quiet.regions = fs.regions;
  kdamondTicks(quiet, 0);
  REQUIRE(unbudgeted.drain(1 * kSec).ok());
  kdamondTicks(quiet, 100);  // a whole core
  REQUIRE(unbudgeted.drain(2 * kSec).ok());
  CHECK(unbudgeted.sampleUs() == 5000);
  CHECK(unbudgeted.cpuRatio() < 0);
  CHECK(unbudgeted.state().find("cpu=") == std::string::npos);
  unbudgeted.stop();
}

#include <doctest/doctest.h>

#include <sstream>

#include "telemetry/hotness/HeatObservation.h"

using namespace tierd;
using namespace tierd::telemetry;

namespace {

// A started source that yields its samples on the first drain, or fails every drain; it weighs
// its samples as the source it is named after (weightKindOf).
class OneBatchSource final : public HotnessSource {
 public:
  OneBatchSource(std::string name, std::vector<AccessSample> samples, bool fail = false)
      : name_(std::move(name)), samples_(std::move(samples)), fail_(fail) {}
  std::string name() const override { return name_; }
  WeightKind weightKind() const override { return weightKindOf(name_); }
  Status start() override { return Ok{}; }
  Result<std::vector<AccessSample>> drain(uint64_t) override {
    ++drains;
    if (fail_) return Error::env("the source broke", "test");
    stats_.samples += samples_.size();
    return std::exchange(samples_, {});
  }
  void stop() override { ++stops; }
  SourceStats stats() const override { return stats_; }
  int drains = 0, stops = 0;

 private:
  std::string name_;
  std::vector<AccessSample> samples_;
  bool fail_;
  SourceStats stats_;
};

AccessSample at(pid_t pid, uint64_t vaddr, uint64_t weight) {
  AccessSample s;
  s.pid = pid;
  s.tid = pid;
  s.vaddr = vaddr;
  s.weight = weight;
  return s;
}

}  // namespace

TEST_CASE("observeHeat drains once when no time is asked for, keeps the pid's samples, stops") {
  OneBatchSource src("damon-vaddr", {at(7, 0x200000, 5), at(7, 0x200100, 2), at(8, 0x400000, 9)});
  RegionHeatMap heat;
  SourceStats stats;
  REQUIRE(observeHeat(src, 7, 0, heat, stats).ok());
  CHECK(src.drains == 1);
  CHECK(src.stops == 1);
  CHECK(stats.samples == 3);
  CHECK(heat == RegionHeatMap{{0x200000, 7}});  // DAMON samples weigh their nr_accesses
}

TEST_CASE("observeHeat returns a failed drain and still stops the source") {
  OneBatchSource src("perf-pebs", {}, /*fail=*/true);
  RegionHeatMap heat;
  SourceStats stats;
  auto s = observeHeat(src, 7, 0, heat, stats);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "the source broke");
  CHECK(src.stops == 1);
}

TEST_CASE("replayHeat counts samples of sampled sources once each, DAMON ones by weight") {
  Trace perf;
  perf.header.source = "perf-pebs";
  perf.samples = {at(7, 0x200000, 300), at(7, 0x3fffff, 300), at(9, 0x200000, 1)};
  RegionHeatMap heat;
  CHECK(replayHeat(perf, 7, heat).samples == 3);
  CHECK(heat == RegionHeatMap{{0x200000, 2}});
  Trace damon = perf;
  damon.header.source = "damon-vaddr";
  RegionHeatMap weighted;
  replayHeat(damon, 7, weighted);
  CHECK(weighted == RegionHeatMap{{0x200000, 600}});
}

TEST_CASE("writeHeatRanking lists regions hottest first with truth and verdict") {
  RegionHeatMap heat = {{0x0, 1}, {0x200000, 9}, {0x400000, 1}};
  HotSetTruth truth;
  truth.pid = 7;
  truth.ranges = {{0x200000, 0x400000}};
  HotSetScore score;
  score.cut.threshold = 4.5;
  score.cut.hot = {0x200000};
  std::ostringstream out;
  writeHeatRanking(out, heat, truth, score);
  CHECK(out.str() ==
        "# region heat truth(1=hot) called(1=hot); threshold 4.5\n"
        "0x200000 9 1 1\n"
        "0x0 1 0 0\n"
        "0x400000 1 0 0\n");
}

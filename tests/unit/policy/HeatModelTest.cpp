// HeatModel: decay math, region geometry, memory bounds and release, move history.
#include <doctest/doctest.h>

#include <cmath>

#include "policy/HeatBench.h"
#include "policy/HeatModel.h"
#include "policy/Zipf.h"
#include "tierd/core/Units.h"

using namespace tierd;
using namespace tierd::policy;

namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kBase = 0x7f0000000000ull;

AccessSample at(pid_t pid, uint64_t vaddr, uint64_t timeNs, uint64_t weight = 1) {
  AccessSample s;
  s.pid = pid;
  s.tid = pid;
  s.vaddr = vaddr;
  s.timeNs = timeNs;
  s.weight = weight;
  return s;
}

HeatModel oneWorkload(uint64_t halfLifeNs = 10 * kSec, uint64_t cooldownNs = 1 * kSec) {
  HeatModel m;
  m.setWorkload(0, {halfLifeNs, cooldownNs});
  m.assignPid(100, 0);
  return m;
}

}  // namespace

TEST_CASE("a sample's heat halves every half-life, lazily and through decay()") {
  HeatModel m = oneWorkload(10 * kSec);
  std::vector<AccessSample> b = {at(100, kBase + 5, 1 * kSec)};
  m.ingest(b, 1 * kSec);
  REQUIRE(m.regions(0, 1 * kSec).size() == 1);
  CHECK(m.regions(0, 1 * kSec)[0].heat == doctest::Approx(1.0));
  CHECK(m.regions(0, 11 * kSec)[0].heat == doctest::Approx(0.5));
  CHECK(m.regions(0, 21 * kSec)[0].heat == doctest::Approx(0.25));
  CHECK(m.regions(0, 6 * kSec)[0].heat == doctest::Approx(std::exp2(-0.5)));
  m.decay(11 * kSec);  // folding is exact: the later answer does not change
  CHECK(m.regions(0, 11 * kSec)[0].heat == doctest::Approx(0.5));
  CHECK(m.regions(0, 21 * kSec)[0].heat == doctest::Approx(0.25));
}

TEST_CASE("steady sampling converges to the geometric sum") {
  const uint64_t hl = 2 * kSec, dt = kSec / 10;
  HeatModel m = oneWorkload(hl);
  const int n = 400;
  std::vector<AccessSample> b;
  for (int i = 1; i <= n; ++i)
    b.push_back(at(100, kBase + 4096, static_cast<uint64_t>(i) * dt));
  m.ingest(b, n * dt);
  double q = std::exp2(-static_cast<double>(dt) / static_cast<double>(hl));
  double expected = (1 - std::pow(q, n)) / (1 - q);
  CHECK(m.regions(0, n * dt)[0].heat == doctest::Approx(expected).epsilon(1e-4));
  // r * half_life / ln 2 in the limit (r = 10/s): 28.85, the discrete sum is within half a sample.
  CHECK(std::fabs(expected - 10.0 * 2 / std::log(2.0)) < 0.6);
}

TEST_CASE("weights, batching and out-of-order times") {
  HeatModel m = oneWorkload(10 * kSec);
  std::vector<AccessSample> b = {at(100, kBase, 5 * kSec, 3), at(100, kBase + 1, 2 * kSec, 3)};
  m.ingest(b, 5 * kSec, /*useWeight=*/true);
  // The second sample is older than the region's time: clamped to it, so both count at 5 s.
  CHECK(m.regions(0, 5 * kSec)[0].heat == doctest::Approx(6.0));
  std::vector<AccessSample> late = {at(100, kBase, 0, 1)};  // time 0 = now
  m.ingest(late, 15 * kSec);
  CHECK(m.regions(0, 15 * kSec)[0].heat == doctest::Approx(6.0 * std::exp2(-1.0) + 1));
  CHECK(m.ingestStats().samples == 3);
}

TEST_CASE("a weighted batch over a long wait counts once per interval waited (TickSpan)") {
  // every: a rate of 5 per 1 s tick at 1..8 s; waited: the same at 1..4 s, then one batch at 8 s
  // standing for the four ticks it waited.
  HeatModel every = oneWorkload(2 * kSec), waited = oneWorkload(2 * kSec);
  for (uint64_t t = 1; t <= 8; ++t) {
    std::vector<AccessSample> b = {at(100, kBase, 0, 5)};
    every.ingest(b, t * kSec, /*useWeight=*/true);
    if (t <= 4) waited.ingest(b, t * kSec, /*useWeight=*/true);
  }
  std::vector<AccessSample> b = {at(100, kBase, 0, 5)};
  waited.ingest(b, 8 * kSec, /*useWeight=*/true, TickSpan{4.0, kSec});
  CHECK(waited.regions(0, 8 * kSec)[0].heat ==
        doctest::Approx(every.regions(0, 8 * kSec)[0].heat).epsilon(1e-4));
  // Without the span the wait loses heat: tick 4's decayed by 2^-2, plus one rate.
  HeatModel plain = oneWorkload(2 * kSec);
  for (uint64_t t = 1; t <= 4; ++t)
    plain.ingest(b, t * kSec, /*useWeight=*/true);
  const double atFour = plain.regions(0, 4 * kSec)[0].heat;
  plain.ingest(b, 8 * kSec, /*useWeight=*/true);
  CHECK(plain.regions(0, 8 * kSec)[0].heat == doctest::Approx(atFour / 4 + 5).epsilon(1e-4));
  CHECK(plain.regions(0, 8 * kSec)[0].heat < 0.7 * waited.regions(0, 8 * kSec)[0].heat);
  // Per-sample counts (PMU sources) accumulate over a wait by themselves: the span is ignored.
  HeatModel counted = oneWorkload(2 * kSec);
  counted.ingest(b, 8 * kSec, /*useWeight=*/false, TickSpan{4.0, kSec});
  CHECK(counted.regions(0, 8 * kSec)[0].heat == doctest::Approx(1.0));
}

TEST_CASE("samples fall into 2 MiB regions, 1 GiB for 1 GiB hugetlb, clipped to mappings") {
  HeatModel m = oneWorkload();
  REQUIRE(
      m.setMappings(100, {{kBase, kBase + 8 * kMiB, 2 * kMiB, false},
                          {kBase + 2 * kGiB, kBase + 4 * kGiB, kGiB, true},
                          {kBase + 5 * kGiB + 4096, kBase + 5 * kGiB + 5 * 4096, 4096, false}}));
  std::vector<AccessSample> b = {
      at(100, kBase + 1, kSec),
      at(100, kBase + 2 * kMiB - 1, kSec),
      at(100, kBase + 2 * kMiB, kSec),             // next region
      at(100, kBase + 3 * kGiB + 12345, kSec),     // second 1 GiB page
      at(100, kBase + 5 * kGiB + 3 * 4096, kSec),  // base pages, clipped
      at(100, kBase + 9 * kMiB, kSec),             // outside every mapping
      at(999, kBase, kSec),                        // unknown pid
  };
  m.ingest(b, kSec);
  auto r = m.regions(0, kSec);
  REQUIRE(r.size() == 4);
  CHECK(r[0].start == kBase);
  CHECK(r[0].length == 2 * kMiB);
  CHECK(r[0].heat == doctest::Approx(2.0));
  CHECK(r[1].start == kBase + 2 * kMiB);
  CHECK(r[2].start == kBase + 3 * kGiB);
  CHECK(r[2].length == kGiB);
  CHECK(r[2].pageSize == kGiB);
  CHECK(r[2].hugetlb);
  CHECK(r[3].start == kBase + 5 * kGiB + 4096);
  CHECK(r[3].length == 4 * 4096);
  CHECK(r[3].pageSize == 4096);
  CHECK(m.ingestStats().outsideMappings == 1);
  CHECK(m.ingestStats().unknownPid == 1);
  CHECK_FALSE(m.setMappings(100, {{kBase, kBase + 4 * kMiB, 4096, false},
                                  {kBase + 2 * kMiB, kBase + 6 * kMiB, 4096, false}}));  // overlap
  // A mapping that goes away releases its regions.
  REQUIRE(m.setMappings(100, {{kBase, kBase + 8 * kMiB, 2 * kMiB, false}}));
  CHECK(m.regions(0, kSec).size() == 2);
}

TEST_CASE("memory stays under 32 KiB per tracked GiB and is released with workload and pid") {
  HeatModel m;
  CHECK(HeatModel::regionEntryBytes() == 32);
  const size_t empty = m.modelBytes();
  m.setWorkload(0, {});
  m.setWorkload(1, {});
  const uint64_t gib = 64;
  for (pid_t pid : {100, 200}) {
    m.assignPid(pid, pid == 100 ? 0 : 1);
    std::vector<std::pair<uint64_t, NodeId>> where;
    for (uint64_t r = 0; r < gib * kGiB / (2 * kMiB) / 2; ++r)
      where.push_back({kBase + r * 2 * kMiB, 1});
    m.setLocations(pid, where);
  }
  // And samples over it (zipf), which must not grow the model beyond the regions.
  ZipfGenerator z(16384, 0.99, 7);
  std::vector<AccessSample> b;
  for (int i = 0; i < 100000; ++i)
    b.push_back(at(100, kBase + z.next() * 2 * kMiB, kSec));
  m.ingest(b, kSec);
  CHECK(m.trackedBytes() == gib * kGiB);
  double perGiB = static_cast<double>(m.modelBytes()) / gib;
  CHECK(perGiB <= 32 * 1024);
  m.removeWorkload(1);
  CHECK(m.regionCount() == 16384);
  m.removePid(100);
  CHECK(m.regionCount() == 0);
  CHECK(m.modelBytes() < empty + 200);  // only the workload entry is left
}

TEST_CASE("decay forgets cold unlocated regions, keeps located ones") {
  HeatModel m = oneWorkload(1 * kSec);
  std::vector<AccessSample> b = {at(100, kBase, kSec), at(100, kBase + 2 * kMiB, kSec)};
  m.ingest(b, kSec);
  m.setLocations(100, {{kBase, 0}});
  m.decay(kSec + 5 * kSec);  // 1/32 of a sample left: above kForgetHeat (1/64)
  CHECK(m.regionCount() == 2);
  m.decay(kSec + 7 * kSec);  // 1/128
  CHECK(m.regionCount() == 1);
  CHECK(m.regions(0, 8 * kSec)[0].node == 0);
}

TEST_CASE("recorded moves set the node and history, ping-pong is held and counted") {
  const uint64_t cooldown = 1 * kSec;
  HeatModel m = oneWorkload(10 * kSec, cooldown);
  m.setLocations(100, {{kBase, 1}, {kBase + 2 * kMiB, 1}});
  auto move = [&](Direction d, NodeId to, uint64_t now, MoveOutcome res = MoveOutcome::Moved) {
    RangeOutcome o{100, kBase, 2 * kMiB, d, to, res};
    m.recordResults(std::span<const RangeOutcome>(&o, 1), now);
  };
  move(Direction::Promote, 0, 10 * kSec);
  auto r = m.regions(0, 10 * kSec)[0];
  CHECK(r.node == 0);
  CHECK(r.lastMoveNs == 10 * kSec);
  CHECK_FALSE(r.held);
  move(Direction::Demote, 1, 12 * kSec);  // reversal within 4 cooldowns: one flip
  CHECK_FALSE(m.regions(0, 12 * kSec)[0].held);
  move(Direction::Promote, 0, 14 * kSec);  // second reversal: held
  CHECK(m.regions(0, 14 * kSec)[0].held);
  CHECK(m.recordStats().pingPongHeld == 1);
  CHECK(m.regions(0, 14 * kSec + 16 * cooldown - 1)[0].held);
  CHECK_FALSE(m.regions(0, 14 * kSec + 16 * cooldown)[0].held);
  m.decay(14 * kSec + 16 * cooldown);
  // A slow reversal (after more than 4 cooldowns) is not ping-pong.
  move(Direction::Demote, 1, 100 * kSec);
  move(Direction::Promote, 0, 200 * kSec);
  move(Direction::Demote, 1, 300 * kSec);
  CHECK_FALSE(m.regions(0, 300 * kSec)[0].held);
  CHECK(m.recordStats().pingPongHeld == 1);
  CHECK(m.recordStats().moved == 6);
}

TEST_CASE("busy backs off, gone drops, denied holds, no-memory only counts") {
  HeatModel m = oneWorkload(10 * kSec, 1 * kSec);
  m.setLocations(100, {{kBase, 1}, {kBase + 2 * kMiB, 1}, {kBase + 4 * kMiB, 1}});
  std::vector<RangeOutcome> o = {
      {100, kBase, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Busy},
      {100, kBase + 2 * kMiB, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Gone},
      {100, kBase + 4 * kMiB, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Denied},
      {100, kBase + 4 * kMiB, 2 * kMiB, Direction::Promote, 0, MoveOutcome::NoMemory},
      {555, kBase, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Moved},  // unknown pid: ignored
  };
  m.recordResults(o, 5 * kSec);
  auto r = m.regions(0, 5 * kSec);
  REQUIRE(r.size() == 2);
  CHECK(r[0].node == 1);
  CHECK(r[0].lastMoveNs == 5 * kSec);
  CHECK_FALSE(r[0].held);
  CHECK(r[1].held);
  CHECK(m.recordStats().busy == 1);
  CHECK(m.recordStats().gone == 1);
  CHECK(m.recordStats().denied == 1);
  CHECK(m.recordStats().noMemory == 1);
}

TEST_CASE("hottest and coldest rank by heat within the given nodes, ties by address") {
  HeatModel m = oneWorkload(10 * kSec);
  std::vector<AccessSample> b;
  for (int r = 0; r < 6; ++r)
    for (int k = 0; k < (r % 3) + 1; ++k)
      b.push_back(at(100, kBase + r * 2 * kMiB, kSec));
  m.ingest(b, kSec);
  m.setLocations(100, {{kBase, 1},
                       {kBase + 2 * kMiB, 1},
                       {kBase + 4 * kMiB, 1},
                       {kBase + 6 * kMiB, 0},
                       {kBase + 8 * kMiB, 0},
                       {kBase + 10 * kMiB, 0}});
  auto hot = m.hottest(0, {1}, 2, kSec);
  REQUIRE(hot.size() == 2);
  CHECK(hot[0].start == kBase + 4 * kMiB);  // heat 3
  CHECK(hot[1].start == kBase + 2 * kMiB);  // heat 2
  auto cold = m.coldest(0, {0, 1}, 3, kSec);
  REQUIRE(cold.size() == 3);
  CHECK(cold[0].start == kBase);  // heat 1, lowest address first
  CHECK(cold[1].start == kBase + 6 * kMiB);
  CHECK(cold[2].heat == doctest::Approx(2.0));
}

TEST_CASE("the zipf generator is deterministic and zipfian") {
  ZipfGenerator a(1000, 1.0, 1), b(1000, 1.0, 1);
  std::vector<uint64_t> counts(1000);
  int differ = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t x = a.next();
    differ += x != b.next();
    ++counts[x];
  }
  CHECK(differ == 0);
  CHECK(counts[0] > counts[1]);
  CHECK(counts[1] > counts[9]);
  CHECK(static_cast<double>(counts[0]) / 200000 == doctest::Approx(a.probability(0)).epsilon(0.03));
  CHECK(a.probability(0) / a.probability(1) == doctest::Approx(2.0));
  SplitMix64 r(0);
  CHECK(r.next() == 0xe220a8397b1dcdafull);  // the published first output for seed 0
}

TEST_CASE("a range busy again and again backs off exponentially, capped, reset by a move") {
  HeatModel m = oneWorkload(10 * kSec, 1 * kSec);  // cooldown 1 s
  m.setLocations(100, {{kBase, 1}});
  const RangeOutcome busy{100, kBase, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Busy};
  const RangeOutcome moved{100, kBase, 2 * kMiB, Direction::Promote, 0, MoveOutcome::Moved};
  // A pinned page (RDMA/VFIO) answers -EBUSY each time: 1, 2, 4, 8, 16, 16 cooldowns.
  uint64_t t = 10 * kSec;
  const uint64_t expect[] = {1, 2, 4, 8, 16, 16};
  for (uint64_t backoff : expect) {
    m.recordResults({&busy, 1}, t);
    auto r = m.regions(0, t);
    REQUIRE(r.size() == 1);
    CHECK(r[0].lastMoveNs == t);
    CHECK(r[0].retryAtNs == t + backoff * kSec);
    t = r[0].retryAtNs;
  }
  m.recordResults({&moved, 1}, t);
  CHECK(m.regions(0, t)[0].retryAtNs == 0);
  m.recordResults({&busy, 1}, t + kSec);
  CHECK(m.regions(0, t + kSec)[0].retryAtNs == t + 2 * kSec);
}

TEST_CASE("the heat bench measures every run on the tracked regions it was asked for") {
  HeatBenchOptions o;
  o.gib = 1;
  o.samples = 5000;
  o.runs = 3;
  const HeatBenchReport r = runHeatBench(o);
  CHECK(r.regions == 512);
  CHECK(r.trackedBytes == 1ull << 30);
  CHECK(r.modelBytes > 0);
  CHECK(r.cpuRates.size() == 3);
  CHECK(r.wallRates.size() == 3);
  REQUIRE(r.decayNsPerRegion.size() == 3);
  for (double x : r.cpuRates)
    CHECK(x > 0);
}

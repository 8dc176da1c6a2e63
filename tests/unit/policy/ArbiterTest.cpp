// Policy + Arbiter: golden plans from generated sample streams, and properties over random
// snapshots and closed-loop runs (budgets, capacity, cooldown, quota, determinism).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "policy/Arbiter.h"
#include "policy/ConfigCompiler.h"
#include "policy/HeatModel.h"
#include "policy/Zipf.h"
#include "tests/unit/support/Golden.h"
#include "tierd/core/Units.h"

using namespace tierd;
using namespace tierd::policy;

namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t k2M = 2 * kMiB;

std::shared_ptr<const CompiledConfig> makeConfig(const std::string& toml) {
  CompileOutcome out = compileConfigText(toml, "/nonexistent/tierd.toml");
  std::string errs;
  for (const ConfigError& e : out.errors)
    errs += e.describe() + "\n";
  REQUIRE_MESSAGE(out.ok(), errs);
  return std::make_shared<const CompiledConfig>(*out.config);
}

NodeFacts node(NodeId id, TierKind tier, uint64_t total, uint64_t free,
               std::map<uint64_t, uint64_t> huge = {}) {
  NodeFacts n;
  n.id = id;
  n.tier = tier;
  n.totalBytes = total;
  n.freeBytes = free;
  n.freeHugePages = std::move(huge);
  return n;
}

RegionView region(pid_t pid, uint64_t index, NodeId where, double heat, uint64_t lastMove = 0) {
  RegionView r;
  r.pid = pid;
  r.start = kBase + index * k2M;
  r.length = k2M;
  r.pageSize = k2M;
  r.node = where;
  r.heat = heat;
  r.lastMoveNs = lastMove;
  return r;
}

// A context for `cfg` with a fast node 0 and a slow node 1, each 64 GiB with 32 GiB free: room is
// never what limits a plan.
TickContext roomyTwoTiers(std::shared_ptr<const CompiledConfig> cfg) {
  TickContext ctx;
  ctx.config = std::move(cfg);
  ctx.nodes = {node(0, TierKind::Fast, 64 * kGiB, 32 * kGiB),
               node(1, TierKind::Slow, 64 * kGiB, 32 * kGiB)};
  return ctx;
}

// One plan of a fresh Arbiter: `workloads` (TOML) after a [migration] with `fastHeadroom` (a TOML
// value; none by default) and budgets that never limit; fast node 0 with `fastFree` of 64 GiB
// free, slow node 1 roomy; workload 0 holds `regions`.
ArbiterDecision planOnce(const std::string& workloads, uint64_t fastFree,
                         std::vector<RegionView> regions, uint64_t nowNs = kSec,
                         const std::string& fastHeadroom = "\"0%\"") {
  TickContext ctx;
  ctx.nowNs = nowNs;
  ctx.config = makeConfig("[migration]\nfast_headroom = " + fastHeadroom +
                          "\nmax_promote_mib_per_s = 65536\n"
                          "max_demote_mib_per_s = 65536\n" +
                          workloads);
  ctx.nodes = {node(0, TierKind::Fast, 64 * kGiB, fastFree),
               node(1, TierKind::Slow, 64 * kGiB, 32 * kGiB)};
  ctx.workloads = {WorkloadView{0, std::move(regions)}};
  Arbiter arbiter;
  return arbiter.plan(ctx);
}

std::string render(const ArbiterDecision& d) {
  std::ostringstream out;
  for (size_t i = 0; i < d.plan.moves.size(); ++i) {
    const MoveRange& m = d.plan.moves[i];
    char line[200];
    std::snprintf(line, sizeof line, "%s w%u pid %d 0x%llx +%s page %s -> node %d (%s)\n",
                  m.direction == Direction::Promote ? "promote" : "demote ", d.workloads[i],
                  static_cast<int>(m.pid), static_cast<unsigned long long>(m.start),
                  pageSizeName(m.length).c_str(), pageSizeName(m.pageSize).c_str(), m.target,
                  moveReasonName(d.reasons[i]));
    out << line;
  }
  const ArbiterStats& s = d.stats;
  out << "promote " << s.promoteBytes << " B in " << s.promotions << ", demote " << s.demoteBytes
      << " B in " << s.demotions << ", exchanges " << s.exchanges << ", skipped budget "
      << s.skippedBudget << " room " << s.skippedNoRoom << " quota " << s.skippedQuota
      << ", cooling " << s.coolingDown << ", held " << s.held << "\n";
  return out.str();
}

// Compares with tests/fixtures/policy/NAME.plan; TIERD_UPDATE_GOLDEN=1 (exactly) rewrites it.
void checkGolden(const std::string& name, const std::string& text) {
  std::string path = std::string(TIERD_FIXTURES) + "/policy/" + name + ".plan";
  if (tierd::testing::goldenUpdateRequested()) std::ofstream(path) << text;
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  CHECK_MESSAGE(ss.str() == text, "golden " << path << " differs; got:\n" << text);
}

// A zipfian sample stream over `regions` 2 MiB regions of `pid`, ranks scattered by a multiplier.
std::vector<AccessSample> zipfStream(pid_t pid, uint64_t regions, size_t n, uint64_t seed,
                                     uint64_t t0, uint64_t t1) {
  ZipfGenerator z(regions, 1.0, seed);
  SplitMix64 rng(seed + 1);
  std::vector<AccessSample> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = (z.next() * 37) % regions;
    out[i].pid = pid;
    out[i].tid = pid;
    out[i].vaddr = kBase + r * k2M + rng.below(k2M);
    out[i].timeNs = t0 + (t1 - t0) * i / n;
  }
  return out;
}

}  // namespace

TEST_CASE("golden: a zipfian stream promotes its hottest regions within the budget") {
  auto cfg = makeConfig(R"(
[daemon]
interval = "1s"
[migration]
max_promote_mib_per_s = 16
fast_headroom = "0%"
[[workload]]
name = "app"
pids = [100]
)");
  HeatModel model;
  model.setWorkload(0,
                    {cfg->workloads[0].policy.heatHalfLifeNs, cfg->workloads[0].policy.cooldownNs});
  model.assignPid(100, 0);
  std::vector<std::pair<uint64_t, NodeId>> where;
  for (uint64_t r = 0; r < 64; ++r)
    where.push_back({kBase + r * k2M, 1});
  model.setLocations(100, where);
  model.ingest(zipfStream(100, 64, 5000, 11, 0, 10 * kSec), 10 * kSec);

  TickContext ctx;
  ctx.nowNs = 10 * kSec;
  ctx.config = cfg;
  ctx.nodes = {node(0, TierKind::Fast, kGiB, 512 * kMiB),
               node(1, TierKind::Slow, 4 * kGiB, 2 * kGiB)};
  ctx.workloads = {{0, model.regions(0, ctx.nowNs)}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 8);  // 16 MiB/s * 1 s / 2 MiB
  auto hot = model.hottest(0, {1}, 8, ctx.nowNs);
  for (size_t i = 0; i < 8; ++i) {
    CHECK(d.plan.moves[i].start == hot[i].start);
    CHECK(d.plan.moves[i].target == 0);
  }
  checkGolden("zipf-promote", render(d));
}

TEST_CASE("golden: over quota and short on free memory, demotions come first, then exchanges") {
  auto cfg = makeConfig(R"(
[migration]
max_promote_mib_per_s = 64
max_demote_mib_per_s = 64
fast_headroom = "5%"
[[workload]]
name = "a"
pids = [100]
fast_quota = "64MiB"
[[workload]]
name = "b"
pids = [200]
)");
  TickContext ctx;
  ctx.nowNs = 100 * kSec;
  ctx.config = cfg;
  ctx.nodes = {node(0, TierKind::Fast, kGiB, 20 * kMiB),
               node(1, TierKind::Slow, 4 * kGiB, 2 * kGiB)};
  WorkloadView a{0, {}}, b{1, {}};
  for (uint64_t i = 0; i < 40; ++i)
    a.regions.push_back(region(100, i, 0, static_cast<double>((i * 7) % 40)));
  for (uint64_t i = 0; i < 10; ++i)
    b.regions.push_back(region(200, i, 1, 50.0 + static_cast<double>(i)));
  for (uint64_t i = 10; i < 30; ++i)
    b.regions.push_back(region(200, i, 0, 0.02 * static_cast<double>(i)));
  b.regions.push_back(region(200, 40, 1, 99.0, 95 * kSec));  // hot but cooling down (30 s)
  ctx.workloads = {a, b};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  // Order: all demotions before any promotion; over-quota ones first.
  bool seenPromote = false;
  for (const MoveRange& m : d.plan.moves) {
    if (m.direction == Direction::Promote) seenPromote = true;
    CHECK_FALSE((seenPromote && m.direction == Direction::Demote));
  }
  CHECK(d.reasons.front() == MoveReason::OverQuota);
  CHECK(d.stats.coolingDown == 1);
  checkGolden("quota-pressure-exchange", render(d));
}

TEST_CASE("hugetlb regions need a free huge page of their size on the target") {
  auto cfg = makeConfig(
      "[migration]\nfast_headroom = \"0%\"\nmax_promote_mib_per_s = 4096\n"
      "[[workload]]\nname = \"db\"\npids = [7]\n");
  TickContext ctx;
  ctx.nowNs = kSec;
  ctx.config = cfg;
  ctx.nodes = {node(0, TierKind::Fast, 64 * kGiB, 32 * kGiB, {{kGiB, 1}}),
               node(1, TierKind::Slow, 64 * kGiB, 32 * kGiB, {{kGiB, 0}})};
  WorkloadView w{0, {}};
  for (uint64_t i = 0; i < 3; ++i) {
    RegionView r;
    r.pid = 7;
    r.start = kBase + i * kGiB;
    r.length = kGiB;
    r.pageSize = kGiB;
    r.hugetlb = true;
    r.node = 1;
    r.heat = 10.0 + static_cast<double>(i);
    w.regions.push_back(r);
  }
  ctx.workloads = {w};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 1);  // one free 1 GiB page on node 0, though 32 GiB are free
  CHECK(d.plan.moves[0].start == kBase + 2 * kGiB);  // the hottest
  CHECK(d.plan.moves[0].pageSize == kGiB);
  CHECK(d.stats.skippedNoRoom == 2);
}

TEST_CASE("hot_ratio promotes only regions well above the workload's mean heat") {
  // GUPS seen through DAMON with huge pages: 10 hot regions saturate at 20 accesses per check,
  // the 90 cold ones still read as 2.6 (each cold 2 MiB page is touched every few ms). All are
  // above hot_threshold; the fast node has room for every one of them.
  auto plan = [](const std::string& ratio) {
    std::vector<RegionView> regions;
    for (uint64_t i = 0; i < 100; ++i)
      regions.push_back(region(7, i, 1, i % 10 == 0 ? 20.0 : 2.6));
    return planOnce(
        "[[workload]]\nname = \"gups\"\npids = [7]\nhot_threshold = 1.0\ncold_threshold = 0.5\n" +
            ratio,
        32 * kGiB, regions);
  };
  ArbiterDecision off = plan("");
  CHECK(off.plan.moves.size() == 100);  // hot_ratio 0: free fast memory is filled by heat order
  ArbiterDecision on = plan("hot_ratio = 2.0\n");
  REQUIRE(on.plan.moves.size() == 10);  // mean 4.34: the cut at 8.68 keeps exactly the hot set
  for (const MoveRange& m : on.plan.moves)
    CHECK((m.start - kBase) / k2M % 10 == 0);
}

TEST_CASE("fill_headroom: warm regions below the cut fill free fast memory after the hot ones") {
  // GAPBS PageRank seen through DAMON: 4 vertex-array regions far above the rest, 60 edge regions
  // evenly warm (each iteration streams them once). The cut (1.2 x a mean the 4 dominate) keeps
  // only the 4; node 0 has room for 20 regions beyond them.
  auto plan = [](const std::string& fill) {
    std::vector<RegionView> regions;
    for (uint64_t i = 0; i < 64; ++i)  // mean ~ (4 * 6e4 + 60 * 5e3 + 60 * 30) / 64 ~ 8.5e3
      regions.push_back(region(7, i, 1, i < 4 ? 60000.0 : 5000.0 + static_cast<double>(i)));
    regions.push_back(region(7, 100, 1, 3.0));  // below hot_threshold: never a fill
    return planOnce(
        "[[workload]]\nname = \"gapbs\"\npids = [7]\nhot_threshold = 4.0\n"
        "cold_threshold = 1.0\nhot_ratio = 1.2\n" +
            fill,
        24 * k2M, regions);
  };
  ArbiterDecision off = plan("");
  REQUIRE(off.plan.moves.size() == 4);
  for (MoveReason r : off.reasons)
    CHECK(r == MoveReason::Hot);
  ArbiterDecision on = plan("fill_headroom = \"0%\"\n");
  INFO(render(on));
  REQUIRE(on.plan.moves.size() == 24);  // the 4 hot, then 20 fills: exactly node 0's room
  CHECK(on.stats.demotions == 0);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(on.reasons[i] == MoveReason::Hot);
    CHECK((on.plan.moves[i].start - kBase) / k2M < 4);
  }
  for (size_t i = 4; i < 24; ++i) {  // warmest first: regions 63, 62, ... 44
    CHECK(on.reasons[i] == MoveReason::Fill);
    CHECK((on.plan.moves[i].start - kBase) / k2M == 63 - (i - 4));
  }
  CHECK(on.stats.skippedFillNoRoom == 40);  // the 40 fills left when node 0 is full
  CHECK(on.stats.skippedNoRoom == 0);       // no hot region was left
  // Fills keep 16 MiB free; the hot regions do not: 4 hot, then 12 fills (48 - 8 - 16 = 24 MiB).
  ArbiterDecision kept = plan("fill_headroom = \"16MiB\"\n");
  INFO(render(kept));
  REQUIRE(kept.plan.moves.size() == 16);
  CHECK(kept.reasons[3] == MoveReason::Hot);
  CHECK(kept.reasons[4] == MoveReason::Fill);
  CHECK(kept.stats.skippedFillNoRoom == 48);
}

TEST_CASE("fill_headroom: a fill never demotes to make room, a hot region exchanges a fill out") {
  // Node 0 is full: 4 regions that an earlier fill placed (heat 100). On node 1, a warm region
  // (90, below the cut) and, in the second plan, a hot one (1000).
  auto plan = [](bool withHot) {
    std::vector<RegionView> regions;
    for (uint64_t i = 0; i < 4; ++i)
      regions.push_back(region(7, i, 0, 100.0));
    regions.push_back(region(7, 10, 1, 90.0));
    if (withHot) regions.push_back(region(7, 11, 1, 1000.0));
    return planOnce(
        "[[workload]]\nname = \"gapbs\"\npids = [7]\nhot_threshold = 4.0\ncold_threshold = 1.0\n"
        "hot_ratio = 1.2\nfill_headroom = \"0%\"\n",
        0, regions, 100 * kSec);
  };
  ArbiterDecision warm = plan(false);
  INFO(render(warm));
  CHECK(warm.plan.moves.empty());  // 90 is below the cut (1.2 x 98 = 117.6): fill only, no room
  CHECK(warm.stats.skippedFillNoRoom == 1);
  CHECK(warm.stats.skippedNoRoom == 0);
  ArbiterDecision hot = plan(true);
  INFO(render(hot));
  REQUIRE(hot.plan.moves.size() == 2);  // one fill exchanged out for the hot region, nothing else
  CHECK(hot.reasons[0] == MoveReason::Exchange);
  CHECK(hot.plan.moves[0].start == kBase);
  CHECK(hot.reasons[1] == MoveReason::Hot);
  CHECK(hot.plan.moves[1].start == kBase + 11 * k2M);
}

TEST_CASE("fill_headroom: under pressure the regions below the cut go after the cold ones") {
  // Node 0 holds 2 cold regions (0.5), 4 warm ones an earlier fill placed (10..40) and 4 hot ones
  // (1000); mean 410.1, cut 1.2 x that = 492.1. Free memory is `shortBy` regions under the 1 GiB
  // fast_headroom.
  auto plan = [](const std::string& fill, uint64_t shortBy) {
    std::vector<RegionView> regions;
    for (uint64_t i = 0; i < 2; ++i)
      regions.push_back(region(7, i, 0, 0.5));
    for (uint64_t i = 2; i < 6; ++i)
      regions.push_back(region(7, i, 0, 10.0 * static_cast<double>(6 - i)));  // 40, 30, 20, 10
    for (uint64_t i = 6; i < 10; ++i)
      regions.push_back(region(7, i, 0, 1000.0));
    return planOnce(
        "[[workload]]\nname = \"gapbs\"\npids = [7]\nhot_threshold = 4.0\ncold_threshold = 1.0\n"
        "hot_ratio = 1.2\n" +
            fill,
        kGiB - shortBy * k2M, regions, 100 * kSec, "\"1GiB\"");
  };
  auto demoted = [](const ArbiterDecision& d) {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < d.plan.moves.size(); ++i) {
      CHECK(d.reasons[i] == MoveReason::Pressure);
      CHECK(d.plan.moves[i].direction == Direction::Demote);
      out.push_back((d.plan.moves[i].start - kBase) / k2M);
    }
    return out;
  };
  ArbiterDecision noFill = plan("", 3);
  INFO(render(noFill));
  CHECK(demoted(noFill) == std::vector<uint64_t>{0, 1});  // only the cold: warm ones stay
  ArbiterDecision fill = plan("fill_headroom = \"20%\"\n", 3);
  INFO(render(fill));
  CHECK(demoted(fill) == std::vector<uint64_t>{0, 1, 5});  // then the coolest warm one, enough
  ArbiterDecision deep = plan("fill_headroom = \"20%\"\n", 9);
  INFO(render(deep));
  CHECK(demoted(deep) == std::vector<uint64_t>{0, 1, 5, 4, 3, 2});  // never a region above the cut
  CHECK(deep.stats.fastShortBytes == 9 * k2M);
}

TEST_CASE("PromotionCut: hot_threshold, raised to hot_ratio x the mean heat on known nodes") {
  auto cfg = makeConfig(
      "[[workload]]\nname = \"gups\"\npids = [7]\nhot_threshold = 1.0\nhot_ratio = 2.0\n");
  TickContext ctx = roomyTwoTiers(cfg);
  WorkloadView w{0, {}};
  for (uint64_t i = 0; i < 4; ++i)
    w.regions.push_back(region(7, i, 1, i == 0 ? 10.0 : 1.0));  // mean 3.25
  RegionView unknown = region(7, 9, 5, 1000.0);                 // node 5 is not in ctx.nodes
  w.regions.push_back(unknown);
  CHECK(PromotionCut(ctx, w).of(7) == doctest::Approx(6.5));
  w.regions.clear();  // no region: the threshold alone
  CHECK(PromotionCut(ctx, w).of(7) == doctest::Approx(1.0));
  auto low = makeConfig(
      "[[workload]]\nname = \"gups\"\npids = [7]\nhot_threshold = 50.0\nhot_ratio = 2.0\n");
  ctx.config = low;
  w.regions.push_back(region(7, 0, 1, 10.0));
  CHECK(PromotionCut(ctx, w).of(7) == doctest::Approx(50.0));  // the threshold is the floor
}

TEST_CASE("PromotionCut: each process's regions against that process's own mean heat") {
  // Two processes of one workload, sampled by kdamonds at different intervals: process 7's
  // estimates run higher (its hot region 38, its cold ones 8), process 8's saturate at 11.5
  // (hot) against 1.1 (cold). A workload-wide mean (~9.6, cut ~19.2) would never promote 8's
  // hot region; its own mean (~3.7, cut ~7.4) does, and 7's cut stays at 2 x its own mean (31).
  auto cfg = makeConfig(
      "[[workload]]\nname = \"fleet\"\npids = [7, 8]\nhot_threshold = 1.0\nhot_ratio = 2.0\n");
  TickContext ctx = roomyTwoTiers(cfg);
  WorkloadView w{0, {}};
  for (uint64_t i = 0; i < 4; ++i)
    w.regions.push_back(region(7, i, 1, i == 0 ? 38.0 : 8.0));
  for (uint64_t i = 0; i < 4; ++i)
    w.regions.push_back(region(8, i, 1, i == 0 ? 11.5 : 1.1));
  const PromotionCut cut(ctx, w);
  CHECK(cut.of(7) == doctest::Approx(2.0 * (38.0 + 3 * 8.0) / 4));
  CHECK(cut.of(8) == doctest::Approx(2.0 * (11.5 + 3 * 1.1) / 4));
  CHECK(cut.of(9) == doctest::Approx(1.0));  // no region: the threshold
  // The arbiter promotes exactly the hot region of each process.
  ctx.nowNs = 10 * kSec;
  ctx.workloads = {w};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  INFO(render(d));
  REQUIRE(d.plan.moves.size() == 2);
  CHECK(d.plan.moves[0].start == w.regions[0].start);
  CHECK(d.plan.moves[1].start == w.regions[4].start);
  std::set<pid_t> pids;
  for (const MoveRange& m : d.plan.moves)
    pids.insert(m.pid);
  CHECK(pids == std::set<pid_t>{7, 8});
}

TEST_CASE("a region bigger than a tick's budget goes only with a full bucket, then pays it back") {
  auto cfg = makeConfig(
      "[migration]\nfast_headroom = \"0%\"\nmax_promote_mib_per_s = 256\n"
      "[[workload]]\nname = \"db\"\npids = [7]\n");
  TickContext ctx;
  ctx.config = cfg;
  ctx.nodes = {node(0, TierKind::Fast, 64 * kGiB, 32 * kGiB, {{kGiB, 8}}),
               node(1, TierKind::Slow, 64 * kGiB, 32 * kGiB)};
  WorkloadView w{0, {}};
  for (uint64_t i = 0; i < 2; ++i) {
    RegionView r{7, kBase + i * kGiB, kGiB, kGiB, true, 1, 10.0, 0, false};
    w.regions.push_back(r);
  }
  ctx.workloads = {w};
  Arbiter arbiter;
  std::vector<uint64_t> movedAt;
  for (uint64_t t = 1; t <= 12; ++t) {
    ctx.nowNs = t * kSec;
    ArbiterDecision d = arbiter.plan(ctx);
    CHECK(d.plan.moves.size() <= 1);
    if (!d.plan.moves.empty()) movedAt.push_back(t);
  }
  // 1 GiB at 256 MiB/s: one move, then 4 s of debt, then the next.
  CHECK(movedAt == std::vector<uint64_t>{1, 5, 9});
}

TEST_CASE("dry run plans the same but spends no budget") {
  auto cfg = makeConfig(
      "[daemon]\ndry_run = true\n[migration]\nmax_promote_mib_per_s = 4\n"
      "fast_headroom = \"0%\"\n[[workload]]\nname = \"a\"\npids = [1]\n");
  TickContext ctx;
  ctx.config = cfg;
  ctx.nodes = {node(0, TierKind::Fast, kGiB, kGiB), node(1, TierKind::Slow, kGiB, kGiB)};
  ctx.workloads = {{0, {region(1, 0, 1, 9), region(1, 1, 1, 8), region(1, 2, 1, 7)}}};
  Arbiter arbiter;
  for (uint64_t t = 1; t <= 3; ++t) {
    ctx.nowNs = t * kSec;
    ArbiterDecision d = arbiter.plan(ctx);
    CHECK(d.dryRun);
    REQUIRE(d.plan.moves.size() == 2);  // 4 MiB per tick, every tick
    CHECK(d.plan.moves[0].start == kBase);
  }
}

TEST_CASE("page granularity base plans base pages except for hugetlb") {
  auto cfg = makeConfig(
      "[migration]\npage_granularity = \"base\"\nfast_headroom = \"0%\"\n"
      "[[workload]]\nname = \"a\"\npids = [1]\n");
  TickContext ctx;
  ctx.config = cfg;
  ctx.nowNs = kSec;
  ctx.basePageSize = 65536;
  ctx.nodes = {node(0, TierKind::Fast, kGiB, kGiB), node(1, TierKind::Slow, kGiB, kGiB)};
  ctx.workloads = {{0, {region(1, 0, 1, 9)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 1);
  CHECK(d.plan.moves[0].pageSize == 65536);
}

namespace {

// A random snapshot: 1-2 fast and 1-2 slow nodes, 1-3 workloads of up to 40 regions, some
// hugetlb, random heat, history and free memory.
struct World {
  std::shared_ptr<const CompiledConfig> cfg;
  TickContext ctx;
};

World randomWorld(uint64_t seed) {
  SplitMix64 r(seed);
  std::ostringstream toml;
  toml << "[daemon]\ninterval_ms = " << 100 + r.below(1900) << "\n[migration]\n"
       << "max_promote_mib_per_s = " << r.below(5) * 16
       << "\nmax_demote_mib_per_s = " << r.below(5) * 16 << "\nfast_headroom = \"" << r.below(20)
       << "%\"\n";
  size_t nw = 1 + r.below(3);
  for (size_t w = 0; w < nw; ++w)
    toml << "[[workload]]\nname = \"w" << w << "\"\npids = [" << 100 + w << "]\nfast_quota = \""
         << (r.below(2) ? std::to_string(10 + r.below(91)) + "%"
                        : std::to_string(r.below(64)) + "MiB")
         << "\"\ncooldown = \"" << r.below(20) << "s\"\n";
  World world;
  world.cfg = makeConfig(toml.str());
  TickContext& ctx = world.ctx;
  ctx.config = world.cfg;
  ctx.nowNs = 100 * kSec;
  NodeId id = 0;
  for (TierKind t : {TierKind::Fast, TierKind::Slow})
    for (uint64_t k = 0, n = 1 + r.below(2); k < n; ++k) {
      uint64_t total = (64 + r.below(256)) * kMiB;
      ctx.nodes.push_back(node(id, t, total, r.below(total / k2M) * k2M, {{kGiB, r.below(3)}}));
      id += 1 + static_cast<NodeId>(r.below(3));  // sparse ids
    }
  for (size_t w = 0; w < nw; ++w) {
    WorkloadView v{static_cast<WorkloadId>(w), {}};
    for (uint64_t i = 0, n = r.below(41); i < n; ++i) {
      RegionView reg =
          region(static_cast<pid_t>(100 + w), i * 1024, ctx.nodes[r.below(ctx.nodes.size())].id,
                 static_cast<double>(r.below(2000)) / 100.0);
      if (r.below(10) == 0) {
        reg.hugetlb = true;
        reg.length = reg.pageSize = kGiB;
      }
      if (r.below(4) == 0) reg.lastMoveNs = ctx.nowNs - r.below(30) * kSec;
      reg.held = r.below(20) == 0;
      v.regions.push_back(reg);
    }
    ctx.workloads.push_back(v);
  }
  return world;
}

}  // namespace

TEST_CASE("property: budgets, capacity, quota, cooldown, uniqueness and determinism hold") {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    World world = randomWorld(seed);
    const TickContext& ctx = world.ctx;
    const CompiledConfig& cfg = *world.cfg;
    Arbiter a, b;
    ArbiterDecision d = a.plan(ctx);
    ArbiterDecision d2 = b.plan(ctx);
    REQUIRE(d.plan.moves.size() == d2.plan.moves.size());
    CHECK(render(d) == render(d2));  // deterministic

    const double interval = static_cast<double>(cfg.daemon.intervalNs) / 1e9;
    for (Direction dir : {Direction::Promote, Direction::Demote}) {
      double perTick =
          static_cast<double>(dir == Direction::Promote ? cfg.migration.maxPromoteMiBPerS
                                                        : cfg.migration.maxDemoteMiBPerS) *
          kMiB * interval;
      uint64_t bytes = 0, count = 0, largest = 0;
      for (const MoveRange& m : d.plan.moves)
        if (m.direction == dir) bytes += m.length, ++count, largest = std::max(largest, m.length);
      bool ok = static_cast<double>(bytes) <= perTick ||
                (count == 1 && static_cast<double>(largest) > perTick);
      CHECK_MESSAGE(ok, "seed " << seed << ": " << bytes << " B over budget " << perTick);
    }

    // Capacity, replayed independently in plan order.
    uint64_t fastTotal = 0;
    for (const NodeFacts& n : ctx.nodes)
      if (n.tier == TierKind::Fast) fastTotal += n.totalBytes;
    uint64_t headroom = cfg.migration.fastHeadroom.resolve(fastTotal);
    std::map<NodeId, int64_t> freeB, huge;
    std::map<NodeId, const NodeFacts*> facts;
    for (const NodeFacts& n : ctx.nodes) {
      freeB[n.id] = static_cast<int64_t>(n.freeBytes);
      huge[n.id] = static_cast<int64_t>(n.freeHugePages.at(kGiB));
      facts[n.id] = &n;
    }
    std::map<std::pair<pid_t, uint64_t>, const RegionView*> byKey;
    std::map<WorkloadId, int64_t> fastUsed;
    for (const WorkloadView& w : ctx.workloads)
      for (const RegionView& r : w.regions) {
        byKey[{r.pid, r.start}] = &r;
        if (facts.count(r.node) && facts[r.node]->tier == TierKind::Fast)
          fastUsed[w.id] += static_cast<int64_t>(r.length);
      }
    std::set<std::pair<pid_t, uint64_t>> seen;
    for (size_t i = 0; i < d.plan.moves.size(); ++i) {
      const MoveRange& m = d.plan.moves[i];
      const RegionView* r = byKey.at({m.pid, m.start});
      CHECK(seen.insert({m.pid, m.start}).second);  // each region at most once
      CHECK_FALSE(r->held);
      uint64_t cooldown = cfg.workloads.at(d.workloads[i]).policy.cooldownNs;
      CHECK((r->lastMoveNs == 0 || ctx.nowNs >= r->lastMoveNs + cooldown));
      const NodeFacts& to = *facts.at(m.target);
      CHECK(to.tier == (m.direction == Direction::Promote ? TierKind::Fast : TierKind::Slow));
      CHECK(facts.at(r->node)->tier != to.tier);
      if (r->hugetlb) {
        huge[m.target] -= 1;
        huge[r->node] += 1;
        CHECK_MESSAGE(huge[m.target] >= 0, "seed " << seed);
      } else {
        freeB[m.target] -= static_cast<int64_t>(m.length);
        freeB[r->node] += static_cast<int64_t>(m.length);
        int64_t reserve = to.tier == TierKind::Fast
                              ? static_cast<int64_t>(static_cast<long double>(headroom) *
                                                     to.totalBytes / fastTotal)
                              : 0;
        CHECK_MESSAGE(freeB[m.target] >= reserve, "seed " << seed << " node " << m.target);
      }
      int64_t sign = m.direction == Direction::Promote ? 1 : -1;
      fastUsed[d.workloads[i]] += sign * static_cast<int64_t>(m.length);
      if (m.direction == Direction::Promote) {
        uint64_t quota = cfg.workloads.at(d.workloads[i]).policy.fastQuota.resolve(fastTotal);
        CHECK_MESSAGE(fastUsed[d.workloads[i]] <= static_cast<int64_t>(quota), "seed " << seed);
      }
    }
    checked += static_cast<int>(d.plan.moves.size());
  }
  CHECK(checked > 300);  // the random worlds did plan moves
}

TEST_CASE(
    "property: in a closed loop no region moves again within its cooldown, and the "
    "cumulative bytes stay within rate x time") {
  uint64_t totalMoves = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SplitMix64 r(seed);
    const uint64_t cooldownS = 1 + r.below(5), rate = 8 + r.below(4) * 8;
    auto cfg = makeConfig(
        "[daemon]\ninterval = \"1s\"\n[migration]\nfast_headroom = \"2%\"\n"
        "max_promote_mib_per_s = " +
        std::to_string(rate) + "\nmax_demote_mib_per_s = " + std::to_string(rate) +
        "\n[[workload]]\nname = \"a\"\npids = [100]\nheat_half_life = \"2s\"\n"
        "fast_quota = \"50%\"\ncooldown = \"" +
        std::to_string(cooldownS) + "s\"\n");
    const uint64_t cooldown = cooldownS * kSec;
    HeatModel model;
    model.setWorkload(0, {2 * kSec, cooldown});
    model.assignPid(100, 0);
    const uint64_t regions = 128;
    std::vector<std::pair<uint64_t, NodeId>> where;
    for (uint64_t i = 0; i < regions; ++i)
      where.push_back({kBase + i * k2M, 1});
    model.setLocations(100, where);
    std::map<NodeId, int64_t> freeB = {{0, static_cast<int64_t>(160 * kMiB)},
                                       {1, static_cast<int64_t>(768 * kMiB)}};
    std::map<uint64_t, uint64_t> lastMove;
    std::map<Direction, uint64_t> cumulative;
    Arbiter arbiter;
    ZipfGenerator z(regions, 1.1, seed);
    for (uint64_t t = 1; t <= 60; ++t) {
      const uint64_t now = t * kSec;
      const uint64_t shift = (t / 15) * 41;  // the hot set moves every 15 s
      std::vector<AccessSample> batch(400);
      for (size_t i = 0; i < batch.size(); ++i) {
        uint64_t reg = (z.next() * 37 + shift) % regions;
        batch[i].pid = 100;
        batch[i].vaddr = kBase + reg * k2M + 64;
        batch[i].timeNs = now - kSec + kSec * i / batch.size();
      }
      model.ingest(batch, now);
      TickContext ctx;
      ctx.nowNs = now;
      ctx.config = cfg;
      ctx.nodes = {node(0, TierKind::Fast, 160 * kMiB, static_cast<uint64_t>(freeB[0])),
                   node(1, TierKind::Slow, kGiB, static_cast<uint64_t>(freeB[1]))};
      ctx.workloads = {{0, model.regions(0, now)}};
      ArbiterDecision d = arbiter.plan(ctx);
      std::vector<RangeOutcome> results;
      for (const MoveRange& m : d.plan.moves) {
        uint64_t& last = lastMove[m.start];
        CHECK_MESSAGE((last == 0 || now >= last + cooldown),
                      "seed " << seed << " t " << t << " region " << m.start);
        last = now;
        NodeId from = m.target == 0 ? 1 : 0;
        freeB[m.target] -= static_cast<int64_t>(m.length);
        freeB[from] += static_cast<int64_t>(m.length);
        CHECK(freeB[m.target] >= 0);
        cumulative[m.direction] += m.length;
        results.push_back({m.pid, m.start, m.length, m.direction, m.target, MoveOutcome::Moved});
      }
      totalMoves += results.size();
      model.recordResults(results, now);
      model.decay(now);
      for (auto& [dir, bytes] : cumulative)
        CHECK_MESSAGE(bytes <= rate * kMiB * t, "seed " << seed << " t " << t);
      // Quota: the workload never holds more than 50% of the fast tier after a tick.
      CHECK(160 * kMiB - static_cast<uint64_t>(freeB[0]) <= 80 * kMiB);
    }
    CHECK(model.recordStats().moved > 0);
  }
  CHECK(totalMoves > 200);
}

namespace {

// The two-socket CXL host of tests/fixtures/topology/2socket-cxl: DRAM nodes 0 and 1 (CPUs 0-31,
// 32-63), CXL node 2 behind socket 0 and CXL node 3 behind socket 1 (nodeN/distance rows).
// Node 1 and node 3 have the most free memory, so a choice by free space alone goes to socket 1.
TickContext twoSocket(const std::string& toml) {
  TickContext ctx;
  ctx.nowNs = kSec;
  ctx.config = makeConfig(toml);
  ctx.nodes = {
      node(0, TierKind::Fast, 64 * kGiB, 8 * kGiB), node(1, TierKind::Fast, 64 * kGiB, 60 * kGiB),
      node(2, TierKind::Slow, 64 * kGiB, 8 * kGiB), node(3, TierKind::Slow, 64 * kGiB, 60 * kGiB)};
  ctx.distance = {{0, {{0, 10}, {1, 21}, {2, 14}, {3, 24}}},
                  {1, {{0, 21}, {1, 10}, {2, 24}, {3, 14}}},
                  {2, {{0, 14}, {1, 24}, {2, 10}, {3, 26}}},
                  {3, {{0, 24}, {1, 14}, {2, 26}, {3, 10}}}};
  return ctx;
}

const std::string kTwoSocketToml =
    "[migration]\nfast_headroom = \"0%\"\nmax_promote_mib_per_s = 4096\n"
    "max_demote_mib_per_s = 4096\n"
    "[[workload]]\nname = \"db\"\npids = [7, 8]\nhot_threshold = 1.0\ncold_threshold = 0.5\n";

}  // namespace

TEST_CASE("a promotion goes to the DRAM node nearest the task's CPUs, not the emptiest one") {
  TickContext ctx = twoSocket(kTwoSocketToml);
  ctx.tasks[7].home = {0};  // runs on socket 0
  ctx.tasks[8].home = {1};  // runs on socket 1
  ctx.workloads = {{0, {region(7, 0, 2, 10.0), region(8, 1, 3, 9.0)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 2);
  CHECK(d.plan.moves[0].pid == 7);
  CHECK(d.plan.moves[0].target == 0);  // node 1 has more free memory but is the other socket
  CHECK(d.plan.moves[1].pid == 8);
  CHECK(d.plan.moves[1].target == 1);
}

TEST_CASE("a promotion that would land farther from the task's CPUs than the region is, waits") {
  TickContext ctx = twoSocket(kTwoSocketToml);
  ctx.nodes[0].freeBytes = 0;  // socket 0 DRAM is full
  ctx.tasks[7].home = {0};
  // Region A sits on near CXL (distance 14 from node 0): remote DRAM (21) would be slower.
  // Region B sits on far CXL (24): remote DRAM (21) is still closer, so it goes there.
  ctx.workloads = {{0, {region(7, 0, 2, 10.0), region(7, 1, 3, 9.0)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 1);
  CHECK(d.plan.moves[0].start == kBase + k2M);
  CHECK(d.plan.moves[0].target == 1);
  CHECK(d.stats.skippedNotCloser == 1);
  CHECK(d.stats.skippedNoRoom == 0);
}

TEST_CASE("a demotion goes to the CXL node nearest the task's CPUs, then the roomiest") {
  TickContext ctx = twoSocket(
      "[migration]\nfast_headroom = \"50%\"\nmax_demote_mib_per_s = 4096\n"
      "[[workload]]\nname = \"db\"\npids = [7]\ncold_threshold = 0.5\n");
  ctx.nodes[1].freeBytes = 40 * kGiB;  // fast free 48 GiB < headroom 64 GiB: pressure
  ctx.tasks[7].home = {0};
  ctx.workloads = {{0, {region(7, 0, 0, 0.1)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 1);
  CHECK(d.plan.moves[0].direction == Direction::Demote);
  CHECK(d.plan.moves[0].target == 2);  // node 3 has more room but is behind the other socket

  // Homes on both sockets: both CXL nodes are at distance 14, so free space decides.
  ctx.tasks[7].home = {0, 1};
  Arbiter again;
  ArbiterDecision both = again.plan(ctx);
  REQUIRE(both.plan.moves.size() == 1);
  CHECK(both.plan.moves[0].target == 3);
}

TEST_CASE("no target outside the task's Mems_allowed is planned, a DRAM-only cpuset is counted") {
  // Under pressure: pid 7's cpuset.mems = 0-1, so its cold regions have nowhere to go.
  TickContext ctx = twoSocket(
      "[migration]\nfast_headroom = \"50%\"\nmax_demote_mib_per_s = 4096\n"
      "[[workload]]\nname = \"db\"\npids = [7]\ncold_threshold = 0.5\n");
  ctx.nodes[1].freeBytes = 40 * kGiB;  // fast free 48 GiB < headroom 64 GiB: pressure
  ctx.tasks[7].allowed = {0, 1};
  ctx.workloads = {{0, {region(7, 0, 0, 0.1), region(7, 1, 1, 0.1)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  CHECK(d.plan.moves.empty());
  CHECK(d.stats.skippedNotAllowed == 2);  // told apart from a lack of room
  CHECK(d.stats.skippedNoRoom == 0);

  // Promotion: pid 8 may not use node 0, though it has the most room.
  TickContext up = twoSocket(kTwoSocketToml);
  up.nodes[0].freeBytes = 60 * kGiB;
  up.nodes[1].freeBytes = 8 * kGiB;
  up.tasks[8].allowed = {1, 3};
  up.workloads = {{0, {region(8, 2, 3, 10.0)}}};
  Arbiter second;
  ArbiterDecision p = second.plan(up);
  REQUIRE(p.plan.moves.size() == 1);
  CHECK(p.plan.moves[0].target == 1);
  // Allowed only where it is: nothing planned, counted.
  up.tasks[8].allowed = {3};
  Arbiter third;
  ArbiterDecision none = third.plan(up);
  CHECK(none.plan.moves.empty());
  CHECK(none.stats.skippedNotAllowed == 1);
}

TEST_CASE("a THP promotion needs free blocks of PMD order on the target, not just MemFree") {
  TickContext ctx = twoSocket(kTwoSocketToml);
  ctx.nodes[0].freeBytes = 32 * kGiB;
  ctx.nodes[0].freePmdBlockBytes = 2 * k2M;  // fragmented: only two free 2 MiB blocks
  ctx.nodes[1].freeBytes = 0;
  ctx.workloads = {{0, {region(7, 0, 2, 10.0), region(7, 1, 2, 9.0), region(7, 2, 2, 8.0)}}};
  Arbiter arbiter;
  ArbiterDecision d = arbiter.plan(ctx);
  REQUIRE(d.plan.moves.size() == 2);
  CHECK(d.plan.moves[0].start == kBase);
  CHECK(d.plan.moves[1].start == kBase + k2M);
  CHECK(d.stats.skippedNoRoom == 1);

  // Base-page regions are not bounded by the block count.
  for (RegionView& r : ctx.workloads[0].regions)
    r.pageSize = 4096;
  Arbiter base;
  CHECK(base.plan(ctx).plan.moves.size() == 3);
}

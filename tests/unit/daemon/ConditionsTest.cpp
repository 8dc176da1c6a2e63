// ConditionLog: what keeps tierd from its job is said once when it begins and once when it ends.

#include "tierd/daemon/Conditions.h"

#include <doctest/doctest.h>

using namespace tierd;
using namespace tierd::daemon;

namespace {

TickReport twoTiers(size_t pids) {
  TickReport r;
  r.topologyMethod = "memory_tiers";
  r.fastNodes = {0};
  r.slowNodes = {1};
  WorkloadReport w;
  w.name = "redis";
  w.pids = pids;
  r.workloads.push_back(w);
  r.topology.caps.numaBalancing = 0;
  return r;
}

}  // namespace

TEST_CASE("a healthy host says nothing") {
  ConditionLog c;
  CHECK(c.update(twoTiers(3), 1, "damon-vaddr").empty());
  CHECK(c.update(twoTiers(3), 1, "damon-vaddr").empty());
}

TEST_CASE("a single-tier host is said once, and the slow tier's arrival once") {
  ConditionLog c;
  TickReport r = twoTiers(1);
  r.slowNodes.clear();
  auto lines = c.update(r, 1, "damon-vaddr");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].warning);
  CHECK(lines[0].text ==
        "nothing to tier: this host has no slow tier (fast nodes 0, slow nodes none, classified "
        "by memory_tiers); tierd moves nothing until CXL memory is online as a NUMA node "
        "(`tierctl topology` shows how nodes are classified)");
  CHECK(c.update(r, 1, "damon-vaddr").empty());  // not once per tick
  lines = c.update(twoTiers(1), 1, "damon-vaddr");
  REQUIRE(lines.size() == 1);
  CHECK_FALSE(lines[0].warning);
  CHECK(lines[0].text == "two tiers now: fast nodes 0, slow nodes 1");
}

TEST_CASE("a config with no workload is a warning until a reload names one") {
  ConditionLog c;
  TickReport none = twoTiers(0);
  none.workloads.clear();
  auto lines = c.update(none, 0, "damon-vaddr");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].warning);
  CHECK(lines[0].text ==
        "no [[workload]] in the config: tierd watches no process and moves nothing");
  CHECK(c.update(none, 0, "damon-vaddr").empty());
  // Configured but matching nothing yet: the engine says that per workload, not this log.
  lines = c.update(twoTiers(0), 1, "damon-vaddr");
  REQUIRE(lines.size() == 1);
  CHECK_FALSE(lines[0].warning);
  CHECK(lines[0].text == "the config names workloads now");
}

TEST_CASE("a source that cannot see accesses is a warning, with what would") {
  ConditionLog c;
  auto lines = c.update(twoTiers(1), 1, "perf-sw-page-faults");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].warning);
  CHECK(lines[0].text.find("sees only a page's first touch while kernel.numa_balancing=0") !=
        std::string::npos);
  // Hinting faults (numa_balancing=1) make page faults a sampler.
  TickReport hinting = twoTiers(1);
  hinting.topology.caps.numaBalancing = 1;
  lines = c.update(hinting, 1, "perf-sw-page-faults");
  REQUIRE(lines.size() == 1);
  CHECK_FALSE(lines[0].warning);

  ConditionLog d;
  lines = d.update(twoTiers(1), 1, "");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].text.find("no hotness source is available") == 0);
}

TEST_CASE("progress lines: eventful ticks always, quiet ones once per progress_interval") {
  constexpr uint64_t kS = 1'000'000'000;
  TickReport quiet = twoTiers(1);
  CHECK(wantsProgressLine(quiet, std::nullopt, 5 * kS, 60 * kS));  // the first tick
  CHECK_FALSE(wantsProgressLine(quiet, 5 * kS, 6 * kS, 60 * kS));
  CHECK_FALSE(wantsProgressLine(quiet, 5 * kS, 64 * kS, 60 * kS));
  CHECK(wantsProgressLine(quiet, 5 * kS, 65 * kS, 60 * kS));
  CHECK(wantsProgressLine(quiet, 5 * kS, 6 * kS, 0));  // "0s": every tick
  TickReport moved = quiet;
  moved.promotedBytes = 2 << 20;
  CHECK(wantsProgressLine(moved, 5 * kS, 6 * kS, 60 * kS));
  TickReport planned = quiet;
  planned.plannedDemoteBytes = 2 << 20;  // a dry run plans and moves nothing: still said
  CHECK(wantsProgressLine(planned, 5 * kS, 6 * kS, 60 * kS));
  TickReport entered = quiet;
  entered.scopeChanges.push_back("workload 'redis': pid 42 in scope");
  CHECK(wantsProgressLine(entered, 5 * kS, 6 * kS, 60 * kS));
  TickReport problem = quiet;
  problem.problems.push_back("workload 'redis': cgroup re-created, history reset");
  CHECK(wantsProgressLine(problem, 5 * kS, 6 * kS, 60 * kS));
}

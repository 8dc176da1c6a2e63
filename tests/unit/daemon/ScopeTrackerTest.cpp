#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tierd/daemon/ScopeTracker.h"

using namespace tierd;
using namespace tierd::daemon;

namespace {

// Answers each resolve with `next` (shared with the test) and counts mount refreshes.
struct ScriptedScopes final : scope::ScopeProvider {
  std::shared_ptr<scope::WorkloadScope> next;
  std::shared_ptr<int> mounts;
  Status refreshMounts() override {
    ++*mounts;
    return Ok{};
  }
  Result<scope::WorkloadScope> resolve(const scope::WorkloadSelector& selector) override {
    CHECK(selector.name == "pod");
    CHECK(selector.cgroup == std::optional<std::string>("/pod"));
    return *next;
  }
};

size_t count(const std::vector<std::string>& lines, const std::string& part) {
  size_t n = 0;
  for (const std::string& l : lines)
    n += l.find(part) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("ScopeTracker: scoped pids, numa_stat, and what changed said once") {
  auto next = std::make_shared<scope::WorkloadScope>();
  auto mounts = std::make_shared<int>(0);
  auto provider = std::make_unique<ScriptedScopes>();
  provider->next = next;
  provider->mounts = mounts;
  ScopeTracker tracker(std::move(provider));
  policy::CompiledConfig config;
  policy::WorkloadConfig w;
  w.name = "pod";
  w.selector.kind = policy::WorkloadSelector::Kind::Cgroup;
  w.selector.cgroup = "/pod";
  config.workloads.push_back(w);
  EngineTotals totals;

  next->pids = {7, 9};
  next->startTimes = {{7, 70}, {9, 90}};
  next->cgroupInode = 100;
  next->anonBytesPerNode = {{0, 4096}};
  next->fileBytesPerNode = {{1, 8192}};
  next->problems = {"a branch skipped"};
  TickReport r1;
  ScopePass p1 = tracker.refresh(config, r1, totals);
  CHECK(*mounts == 1);
  REQUIRE(p1.scoped.size() == 2);
  CHECK(p1.scoped.at(9).startTime == 90);
  CHECK(p1.scoped.at(9).workload == 0);
  CHECK_FALSE(p1.scoped.at(9).executable);
  CHECK(p1.numaStat.at(0).at(0).anon == 4096);
  CHECK(p1.numaStat.at(0).at(1).file == 8192);
  CHECK(p1.recreated.empty());
  CHECK(r1.problems == std::vector<std::string>{"a branch skipped"});

  // The same problem is not said again; a cgroup with another inode is a new instance.
  next->cgroupInode = 101;
  TickReport r2;
  ScopePass p2 = tracker.refresh(config, r2, totals);
  CHECK(p2.recreated == std::vector<policy::WorkloadId>{0});
  CHECK(count(r2.problems, "a branch skipped") == 0);
  CHECK(count(r2.problems, "workload 'pod': cgroup re-created, history reset") == 1);

  // No process: said once per stretch of emptiness.
  next->pids.clear();
  next->startTimes.clear();
  next->cgroupsWalked = 3;
  TickReport r3, r4;
  CHECK(tracker.refresh(config, r3, totals).scoped.empty());
  tracker.refresh(config, r4, totals);
  CHECK(count(r3.problems, "workload 'pod': selector matches no process (3 cgroups read") == 1);
  CHECK(count(r4.problems, "matches no process") == 0);
  CHECK(totals.scopeErrors == 0);

  // A forgotten workload's next inode is no re-creation.
  tracker.forgetWorkload("pod");
  next->cgroupInode = 102;
  TickReport r5;
  CHECK(tracker.refresh(config, r5, totals).recreated.empty());
}

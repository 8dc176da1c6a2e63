// MovePagesMigrator on answers the real 6.12 kernel gives, found in the QEMU rig
// (tests/vm/scenarios/migrate-faults) and in mm/migrate.c: a whole call failing with -ENOMEM
// after some of its pages moved (the model kernel now always answers so; the kernel never writes
// a per-page -ENOMEM), -EACCES for a target outside the task's cpuset, -ENODEV for a target
// whose memory was taken offline, -EINVAL for a process
// that exited but is not reaped, and a pid reused by a new process (move_pages takes a pid: the
// kernel answers for whoever holds it now).
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>
#include <vector>

#include "tierd/core/Units.h"
#include "tierd/simulate/ModelKernelMigrator.h"

using namespace tierd;
using namespace tierd::migrate;

namespace {

constexpr pid_t kPid = 100;
constexpr uint64_t kBase = 0x10000000;
constexpr uint64_t kHuge = 0x80000000;  // aligned to 1 GiB
constexpr int64_t kNoDeadline = INT64_MAX;

MoveRange range(uint64_t start, uint64_t length, NodeId to, pid_t pid = kPid) {
  MoveRange r;
  r.pid = pid;
  r.start = start;
  r.length = length;
  r.target = to;
  return r;
}

}  // namespace

TEST_CASE("a call failing with -ENOMEM after moving some pages: moved ones count as moved") {
  MigratorConfig cfg;
  cfg.initialBytesPerCall = 4 * kGiB;  // the three 1 GiB pages go in one move call
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kHuge, 3 * kGiB, FakeBacking::Hugetlb, kGiB);
  k.populate(kPid, kHuge, 3 * kGiB, 1);
  k.setCapacity(0, kGiB, 1);  // one free 1 GiB page on the target
  k.map(300, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(300, kBase, 16 * kKiB, 1);
  auto res = m.execute({range(kHuge, 3 * kGiB, 0), range(kBase, 16 * kKiB, 0, 300)}, kNoDeadline);
  const RangeResult& huge = res.ranges[0];
  CHECK(huge.outcomes[MoveOutcome::Moved] == 1);
  CHECK(huge.outcomes[MoveOutcome::NoMemory] == 2);
  CHECK(huge.outcomes[MoveOutcome::OtherError] == 0);
  CHECK(huge.bytesMoved == kGiB);
  CHECK_FALSE(huge.dropped);
  CHECK(res.stats.errnoCalls.at(ENOMEM) == 1);
  CHECK(res.stats.errnoPages.at(ENOMEM) == 2);
  CHECK(k.nodeOf(kPid, kHuge) == 0);
  CHECK(k.nodeOf(kPid, kHuge + kGiB) == 1);
  CHECK(k.nodeOf(kPid, kHuge + 2 * kGiB) == 1);
  // Base pages to the same node are another size: still sent and moved.
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 4);
  CHECK(k.nodeOf(300, kBase + 12 * kKiB) == 0);
  CHECK(res.stats.bytesMoved == kGiB + 16 * kKiB);
}

TEST_CASE("after a call-level -ENOMEM that size is not sent to that node again in the batch") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;  // pages 3 and 4 come in a later query/move
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kHuge, 4 * kGiB, FakeBacking::Hugetlb, kGiB);
  k.populate(kPid, kHuge, 4 * kGiB, 1);
  k.setCapacity(0, kGiB, 0);
  auto res = m.execute({range(kHuge, 4 * kGiB, 0)}, kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::NoMemory] == 4);
  CHECK(res.stats.errnoCalls.at(ENOMEM) == 1);
  size_t moves = 0;
  for (const auto& l : m.log())
    moves += l.rfind("move ", 0) == 0;
  CHECK(moves == 1);
}

TEST_CASE("-ENOMEM in a call with several target nodes: later node groups are sent again") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 32 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 32 * kKiB, 1);
  k.setCapacity(0, 4 * kKiB, 1);                        // one free base page on node 0
  k.scriptPageError(kPid, kBase + 4 * kKiB, EBUSY, 1);  // busy once, in the first group
  // One call: [2,2 | 0,0,0,0 | 2,2]. The kernel moves group 1 (status -EBUSY for its second
  // page), one page of group 2, fails with -ENOMEM and never attempts group 3.
  auto res = m.execute({range(kBase, 8 * kKiB, 2), range(kBase + 8 * kKiB, 16 * kKiB, 0),
                        range(kBase + 24 * kKiB, 8 * kKiB, 2)},
                       kNoDeadline);
  // The -EBUSY status written before the failure is kept: busy, retried, moved.
  CHECK(res.ranges[0].outcomes[MoveOutcome::Moved] == 2);
  CHECK(res.ranges[0].outcomes[MoveOutcome::NoMemory] == 0);
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 1);
  CHECK(res.ranges[1].outcomes[MoveOutcome::NoMemory] == 3);
  // Group 3 was never attempted: not no_memory; sent again in its own call, and moved.
  CHECK(res.ranges[2].outcomes[MoveOutcome::NoMemory] == 0);
  CHECK(res.ranges[2].outcomes[MoveOutcome::Moved] == 2);
  CHECK(k.nodeOf(kPid, kBase + 28 * kKiB) == 2);
  CHECK(res.stats.errnoCalls.at(ENOMEM) == 1);
  CHECK(res.stats.errnoPages.at(ENOMEM) == 3);
  CHECK(res.stats.bytesMoved == 5 * 4 * kKiB);
}

TEST_CASE("call-level -EACCES (target outside the cpuset): node_not_allowed, not denied or gone") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 24 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 24 * kKiB, 1);
  // The cpuset shrinks after planning (the first query), before the move call.
  k.beforeCall(1, [&k] { k.setMemsAllowed(kPid, {0, 1, 2}); });
  // One call [2,2 | 3,3 | 2,2]: group 1 moves, the entry for node 3 fails the call.
  auto res = m.execute({range(kBase, 8 * kKiB, 2), range(kBase + 8 * kKiB, 8 * kKiB, 3),
                        range(kBase + 16 * kKiB, 8 * kKiB, 2)},
                       kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::Moved] == 2);  // re-queried: it did move
  CHECK(res.ranges[1].outcomes[MoveOutcome::NodeNotAllowed] == 2);
  CHECK(res.ranges[2].outcomes[MoveOutcome::Moved] == 2);  // not attempted, sent again
  for (const auto& r : res.ranges) {
    CHECK_FALSE(r.dropped);
    CHECK(r.outcomes[MoveOutcome::Denied] == 0);
    CHECK(r.outcomes[MoveOutcome::Gone] == 0);
  }
  CHECK(res.stats.errnoCalls.at(EACCES) == 1);
  CHECK(res.stats.bytesMoved == 16 * kKiB);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 20 * kKiB) == 2);
}

TEST_CASE(
    "call-level -ENODEV (target node offlined): moved pages count as moved and the rest failed") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 24 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 24 * kKiB, 0);
  // Node 1's memory blocks are taken offline after planning (the first query), before the move
  // call: node_state(1, N_MEMORY) is false from then on.
  k.beforeCall(1, [&k] { k.setNodes({0, 2}); });
  // One call [2,2 | 1,1 | 2,2]: group 1 moves, the entry for node 1 fails the call.
  auto res = m.execute({range(kBase, 8 * kKiB, 2), range(kBase + 8 * kKiB, 8 * kKiB, 1),
                        range(kBase + 16 * kKiB, 8 * kKiB, 2)},
                       kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::Moved] == 2);  // flushed before the error
  CHECK(res.ranges[0].outcomes[MoveOutcome::OtherError] == 0);
  CHECK(res.ranges[1].outcomes[MoveOutcome::OtherError] == 2);  // "failed"
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 0);
  CHECK(res.ranges[2].outcomes[MoveOutcome::Moved] == 2);  // not attempted, sent again
  for (const auto& r : res.ranges) {
    CHECK_FALSE(r.dropped);
    CHECK(r.outcomes[MoveOutcome::Gone] == 0);
    CHECK(r.outcomes[MoveOutcome::Denied] == 0);
  }
  CHECK(res.stats.errnoCalls.at(ENODEV) == 1);
  CHECK(res.stats.errnoPages.at(ENODEV) == 2);
  CHECK(res.stats.bytesMoved == 16 * kKiB);
  CHECK(k.nodeOf(kPid, kBase) == 2);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 0);
  CHECK(k.nodeOf(kPid, kBase + 20 * kKiB) == 2);
}

TEST_CASE("-ENODEV at the first entry of a call: nothing moved and other nodes' pages sent again") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 4;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.setNodes({0, 2});  // node 1 has no memory already at planning: the query does not tell
  auto res =
      m.execute({range(kBase, 8 * kKiB, 1), range(kBase + 8 * kKiB, 8 * kKiB, 2)}, kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::OtherError] == 2);
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 2);
  CHECK_FALSE(res.ranges[0].dropped);
  CHECK(res.stats.errnoCalls.at(ENODEV) == 1);
  CHECK(k.nodeOf(kPid, kBase + 12 * kKiB) == 2);
}

TEST_CASE("after -ENODEV the batch's later pages to that node fail without a call") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 48 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 48 * kKiB, 0);
  // Node 1's memory blocks go offline after the plan's query: every call to it would fail.
  k.beforeCall(1, [&k] { k.setNodes({0, 2}); });
  auto res =
      m.execute({range(kBase, 32 * kKiB, 1), range(kBase + 32 * kKiB, 16 * kKiB, 2)}, kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::OtherError] == 8);
  CHECK(res.ranges[0].outcomes[MoveOutcome::Moved] == 0);
  CHECK_FALSE(res.ranges[0].dropped);
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 4);  // another node: still sent
  CHECK(res.stats.errnoCalls.at(ENODEV) == 1);             // one failed call, not one per sub-batch
  CHECK(res.stats.failedCalls == 1);
  CHECK(res.stats.errnoPages.at(ENODEV) == 8);  // every page of the range accounted for
  CHECK(k.nodeOf(kPid, kBase + 40 * kKiB) == 2);
}

TEST_CASE("a target outside Mems_allowed read before the batch is not sent: no call, no error") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.setMemsAllowed(kPid, {0, 1});
  auto res =
      m.execute({range(kBase, 8 * kKiB, 2), range(kBase + 8 * kKiB, 8 * kKiB, 1)}, kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::NodeNotAllowed] == 2);
  CHECK_FALSE(res.ranges[0].dropped);
  CHECK(res.ranges[1].outcomes[MoveOutcome::Moved] == 2);
  CHECK(res.stats.failedCalls == 0);
  const std::vector<std::string> golden = {
      "query pid=100 n=2 first=0x10002000 -> 0 [0,0]",
      "move pid=100 n=2 first=0x10002000 to=1 -> 0 [1,1]",
  };
  CHECK(m.log() == golden);
}

TEST_CASE("an exited but unreaped process (-EINVAL, empty maps) is gone, not an error") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  for (pid_t p : {100, 300}) {
    k.map(p, kBase, 16 * kKiB, FakeBacking::Base);
    k.populate(p, kBase, 16 * kKiB, 0);
  }
  k.beforeCall(1, [&k] { k.zombiePid(100); });  // after the first query, before its move
  auto res = m.execute({range(kBase, 8 * kKiB, 1, 100), range(kBase + 8 * kKiB, 8 * kKiB, 1, 100),
                        range(kBase, 16 * kKiB, 1, 300)},
                       kNoDeadline);
  CHECK(res.ranges[0].outcomes[MoveOutcome::Gone] == 2);
  CHECK(res.ranges[1].outcomes[MoveOutcome::Gone] == 2);
  CHECK(res.ranges[0].outcomes[MoveOutcome::OtherError] == 0);
  CHECK(res.ranges[0].dropped);
  CHECK(res.ranges[1].dropped);
  CHECK(res.ranges[2].outcomes[MoveOutcome::Moved] == 4);
  CHECK(res.stats.errnoCalls.at(EINVAL) == 1);  // what the kernel said, counted as is
  CHECK(res.stats.errnoCalls.count(ESRCH) == 0);
}

// The model kernel itself, against mm/migrate.c do_pages_move: the pages array is handled in runs
// of consecutive entries with the same target node ("node groups"); each group is migrated when
// the next one starts, and the first error returns at once (earlier groups stay moved and keep
// the statuses written for them, later groups are not attempted).
namespace {

long moveDirect(FakePageSystem& k, const std::vector<uint64_t>& addrs,
                const std::vector<int>& nodes, std::vector<int>& status) {
  std::vector<void*> p(addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i)
    p[i] = reinterpret_cast<void*>(addrs[i]);
  status.assign(addrs.size(), INT32_MIN);
  return k.movePages(kPid, addrs.size(), p.data(), nodes.data(), status.data(), 0);
}

}  // namespace

TEST_CASE("model kernel: -ENOMEM fails the call at its node group, later groups not attempted") {
  FakePageSystem k;
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 1);
  k.setCapacity(0, 4 * kKiB, 1);  // one free base page on node 0
  std::vector<int> status;
  const long ret = moveDirect(k, {kBase, kBase + 4 * kKiB, kBase + 8 * kKiB, kBase + 12 * kKiB},
                              {2, 0, 0, 2}, status);
  CHECK(ret == -ENOMEM);
  // Group 1 (node 2) moved and its status was written; group 2 (node 0) moved one page and then
  // failed: no status written for it, never a per-page -ENOMEM; group 3 was never attempted.
  CHECK(status == std::vector<int>{2, INT32_MIN, INT32_MIN, INT32_MIN});
  CHECK(k.nodeOf(kPid, kBase) == 2);
  CHECK(k.nodeOf(kPid, kBase + 4 * kKiB) == 0);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 12 * kKiB) == 1);
}

TEST_CASE("model kernel: a target outside the task's Mems_allowed fails the call with -EACCES") {
  FakePageSystem k;
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 1);
  k.setMemsAllowed(kPid, {0, 1});
  std::vector<int> status;
  const long ret = moveDirect(k, {kBase, kBase + 4 * kKiB, kBase + 8 * kKiB, kBase + 12 * kKiB},
                              {0, 0, 2, 0}, status);
  CHECK(ret == -EACCES);
  // The group before the disallowed node is flushed (moved, statuses written) before the call
  // returns; nothing from the disallowed entry on is attempted.
  CHECK(status == std::vector<int>{0, 0, INT32_MIN, INT32_MIN});
  CHECK(k.nodeOf(kPid, kBase) == 0);
  CHECK(k.nodeOf(kPid, kBase + 4 * kKiB) == 0);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 12 * kKiB) == 1);
  // Queries are not checked against Mems_allowed.
  void* a = reinterpret_cast<void*>(kBase + 8 * kKiB);
  int st = 0;
  CHECK(k.movePages(kPid, 1, &a, nullptr, &st, 0) == 0);
  CHECK(st == 1);
}

TEST_CASE("model kernel: a target node without memory fails the call with -ENODEV") {
  // do_pages_move checks node_state(node, N_MEMORY) before the cpuset and jumps to out_flush as
  // for -EACCES: the pending group is migrated with its statuses stored, the rest not attempted.
  FakePageSystem k;
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.setNodes({0, 2});
  std::vector<int> status;
  const long ret = moveDirect(k, {kBase, kBase + 4 * kKiB, kBase + 8 * kKiB, kBase + 12 * kKiB},
                              {2, 2, 1, 2}, status);
  CHECK(ret == -ENODEV);
  CHECK(status == std::vector<int>{2, 2, INT32_MIN, INT32_MIN});
  CHECK(k.nodeOf(kPid, kBase + 4 * kKiB) == 2);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 0);
  CHECK(k.nodeOf(kPid, kBase + 12 * kKiB) == 0);
}

TEST_CASE("model kernel: a reused pid answers for its new process, not the one that exited") {
  // pid_max wrapped: the process holding kPid exited and a new one got the pid. move_pages(2)
  // takes a pid, so the kernel answers for whoever holds it now.
  FakePageSystem k;
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 1);
  k.scriptPageError(kPid, kBase + 4 * kKiB, EBUSY);
  k.setMemsAllowed(kPid, {1});
  k.reusePid(kPid);
  // The new process has no memory yet: the old addresses are not mapped (-EFAULT), its /proc
  // files are there (it is alive), no node is refused.
  std::vector<int> status;
  CHECK(moveDirect(k, {kBase}, {0}, status) == 0);
  CHECK(status[0] == -EFAULT);
  REQUIRE(k.maps(kPid).ok());
  CHECK(k.maps(kPid)->empty());
  CHECK(k.memsAllowed(kPid).ok());
  // Once it maps the same addresses, its pages are the ones that move: the old one's scripted
  // error is not its.
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 2);
  CHECK(moveDirect(k, {kBase, kBase + 4 * kKiB}, {0, 0}, status) == 0);
  CHECK(status[0] == 0);
  CHECK(status[1] == 0);
  CHECK(k.nodeOf(kPid, kBase + 8 * kKiB) == 2);
  CHECK(std::find(k.log().begin(), k.log().end(), "reuse pid=100") != k.log().end());
}

TEST_CASE("a pid reused after the plan: the identity check refuses every call, nothing moves") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 1);
  // The engine's check (Engine::stillSame: start time and pidfd) sees the new start time.
  bool same = true;
  int checks = 0;
  m.setProcessCheck([&](pid_t pid) {
    ++checks;
    return pid == kPid && same;
  });
  k.beforeCall(0, [&] {
    k.reusePid(kPid);
    k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);  // the new holder, same addresses
    k.populate(kPid, kBase, 16 * kKiB, 1);
    same = false;
  });
  auto res = m.execute({range(kBase, 16 * kKiB, 0)}, kNoDeadline);
  CHECK(checks >= 1);
  CHECK(res.ranges[0].dropped);
  CHECK(res.ranges[0].bytesMoved == 0);
  for (uint64_t a = kBase; a < kBase + 16 * kKiB; a += 4 * kKiB)
    CHECK(k.nodeOf(kPid, a) == 1);  // the new holder's pages stayed
}

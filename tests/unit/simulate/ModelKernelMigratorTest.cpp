// The MovePagesMigrator engine on the modelled kernel: every move_pages status and return case.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "tierd/core/Units.h"
#include "tierd/simulate/ModelKernelMigrator.h"

using namespace tierd;
using namespace tierd::migrate;

namespace {

constexpr pid_t kPid = 100;
constexpr uint64_t kBase = 0x10000000;  // 256 MiB: aligned to 2 MiB and 1 GiB/4
constexpr uint64_t kHuge = 0x80000000;  // 2 GiB: aligned to 1 GiB
constexpr int64_t kNoDeadline = INT64_MAX;

MoveRange range(uint64_t start, uint64_t length, NodeId to, pid_t pid = kPid,
                Direction d = Direction::Promote) {
  MoveRange r;
  r.pid = pid;
  r.start = start;
  r.length = length;
  r.target = to;
  r.direction = d;
  return r;
}

uint64_t count(const RangeResult& r, MoveOutcome o) {
  return r.outcomes[o];
}

size_t countLines(const std::vector<std::string>& log, const std::string& prefix) {
  size_t n = 0;
  for (const auto& l : log)
    if (l.rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("one address per page: base pages, THP per 2 MiB, hugetlb per huge page (golden log)") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.map(kPid, kBase + 2 * kMiB, 4 * kMiB, FakeBacking::Thp);
  k.map(kPid, kHuge, 1 * kGiB, FakeBacking::Hugetlb, 1 * kGiB);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.populate(kPid, kBase + 2 * kMiB, 4 * kMiB, 0);
  k.populate(kPid, kHuge, 1 * kGiB, 0);

  auto res = m.execute(
      {range(kBase, 16 * kKiB, 1), range(kBase + 2 * kMiB, 4 * kMiB, 1), range(kHuge, 1 * kGiB, 1)},
      kNoDeadline);
  REQUIRE(res.ranges.size() == 3);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 4);
  CHECK(count(res.ranges[1], MoveOutcome::Moved) == 2);
  CHECK(count(res.ranges[2], MoveOutcome::Moved) == 1);
  CHECK(res.ranges[1].bytesMoved == 4 * kMiB);
  CHECK(res.stats.bytesMoved == 16 * kKiB + 4 * kMiB + 1 * kGiB);
  CHECK(res.stats.pagesMoved == 7);
  CHECK(k.nodeOf(kPid, kBase + 3 * kMiB) == 1);
  CHECK(k.nodeOf(kPid, kHuge + 5 * kMiB) == 1);
  // First call: 16 MiB budget takes 4 base pages + 2 THPs + the 1 GiB page (>= one page always).
  const std::vector<std::string> golden = {
      "query pid=100 n=7 first=0x10000000 -> 0 [0,0,0,0,0,0,0]",
      "move pid=100 n=7 first=0x10000000 to=1 -> 0 [1,1,1,1,1,1,1]",
  };
  CHECK(m.log() == golden);
  CHECK(res.stats.queryCalls == 1);
  CHECK(res.stats.moveCalls == 1);
  CHECK(res.stats.wallNs > 0);
  CHECK(res.stats.kernelCpuNs > 0);
  CHECK(res.stats.gibPerSecond() > 0);
  CHECK(res.stats.cpuSecondsPerGib() > 0);
}

TEST_CASE("already there pages are not sent, not present pages are skipped, not failures") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 8 * kKiB * 4, FakeBacking::Base);
  k.populate(kPid, kBase, 8 * kKiB, 1);             // 2 pages already on node 1
  k.populate(kPid, kBase + 8 * kKiB, 8 * kKiB, 0);  // 2 pages to move; 4 not present
  auto res = m.execute({range(kBase, 32 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::AlreadyThere) == 2);
  CHECK(count(r, MoveOutcome::Moved) == 2);
  CHECK(count(r, MoveOutcome::NotPresent) == 4);
  CHECK(r.outcomes.total() == 8);
  CHECK_FALSE(r.dropped);
  CHECK(res.stats.errnoPages.at(ENOENT) == 4);
  CHECK(m.log().back() == "move pid=100 n=2 first=0x10002000 to=1 -> 0 [1,1]");

  // Everything already there: no move call at all.
  m.kernel().clearLog();
  auto again = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  CHECK(count(again.ranges[0], MoveOutcome::AlreadyThere) == 4);
  CHECK(again.stats.moveCalls == 0);
  CHECK(countLines(m.log(), "move") == 0);
}

TEST_CASE("a range without a VMA at planning is gone and dropped") {
  ModelKernelMigrator m;
  m.kernel().map(kPid, kBase, 8 * kKiB, FakeBacking::Base);
  m.kernel().populate(kPid, kBase, 8 * kKiB, 0);
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2);
  CHECK(count(res.ranges[0], MoveOutcome::Gone) == 2);
  CHECK(res.ranges[0].dropped);
}

TEST_CASE("-EFAULT from the zero page inside a live VMA is not present, the range stays") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 8 * kKiB, 0);
  k.mapZeroPage(kPid, kBase + 8 * kKiB);
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Moved) == 2);
  CHECK(count(r, MoveOutcome::NotPresent) == 2);  // the zero page (-EFAULT) and -ENOENT
  CHECK(count(r, MoveOutcome::Gone) == 0);
  CHECK_FALSE(r.dropped);
  CHECK(res.stats.errnoPages.at(EFAULT) == 1);
}

TEST_CASE("a range unmapped between planning and moving: -EFAULT drops it") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 6 * 4 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 6 * 4 * kKiB, 0);
  // Call 0 = query of pages 0-1, call 1 = their move; the range is unmapped before call 2.
  k.beforeCall(2, [&k] { k.unmap(kPid, kBase, 6 * 4 * kKiB); });
  auto res =
      m.execute({range(kBase, 6 * 4 * kKiB, 1), range(kBase, 4 * kKiB, 1, 200)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Moved) == 2);
  CHECK(count(r, MoveOutcome::Gone) == 4);  // 2 answered -EFAULT, 2 never sent (dropped)
  CHECK(r.dropped);
  CHECK(res.stats.errnoPages.at(EFAULT) == 2);
  const std::vector<std::string> golden = {
      "query pid=100 n=2 first=0x10000000 -> 0 [0,0]",
      "move pid=100 n=2 first=0x10000000 to=1 -> 0 [1,1]",
      "unmap pid=100 0x10000000+0x6000",
      "query pid=100 n=2 first=0x10002000 -> 0 [-14,-14]",
  };
  CHECK(m.log() == golden);
  // pid 200 has no /proc entry at all: gone at planning, no call made for it.
  CHECK(count(res.ranges[1], MoveOutcome::Gone) == 1);
  CHECK(res.ranges[1].dropped);
}

TEST_CASE("a process that exits mid-batch: ESRCH, its ranges drop, other pids continue") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  for (pid_t p : {100, 300}) {
    k.map(p, kBase, 16 * kKiB, FakeBacking::Base);
    k.populate(p, kBase, 16 * kKiB, 0);
  }
  k.beforeCall(1, [&k] { k.exitPid(100); });  // after the first query, before its move
  auto res = m.execute({range(kBase, 8 * kKiB, 1, 100), range(kBase + 8 * kKiB, 8 * kKiB, 1, 100),
                        range(kBase, 16 * kKiB, 1, 300)},
                       kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Gone) == 2);
  CHECK(count(res.ranges[1], MoveOutcome::Gone) == 2);
  CHECK(res.ranges[0].dropped);
  CHECK(res.ranges[1].dropped);
  CHECK(count(res.ranges[2], MoveOutcome::Moved) == 4);
  CHECK(res.stats.failedCalls == 1);
  CHECK(res.stats.errnoCalls.at(ESRCH) == 1);
  CHECK(countLines(m.log(), "move pid=100") == 1);
  CHECK(countLines(m.log(), "query pid=100") == 1);
}

TEST_CASE("-ENOMEM stops sending that page size to that node for the rest of the batch") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 3;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 10 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 10 * kMiB, 0);
  k.map(kPid, kBase + 64 * kMiB, 8 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase + 64 * kMiB, 8 * kKiB, 0);
  k.setCapacity(1, 2 * kMiB, 2);
  auto res =
      m.execute({range(kBase, 10 * kMiB, 1), range(kBase + 64 * kMiB, 8 * kKiB, 1)}, kNoDeadline);
  const auto& thp = res.ranges[0];
  CHECK(count(thp, MoveOutcome::Moved) == 2);
  CHECK(count(thp, MoveOutcome::NoMemory) == 3);  // 1 answered -ENOMEM, 2 never sent
  CHECK(res.stats.errnoPages.at(ENOMEM) == 1);
  CHECK(countLines(m.log(), "move pid=100 n=3 first=0x10000000") == 1);
  CHECK(countLines(m.log(), "query pid=100 n=3 first=0x10600000") == 0);
  // Base pages to the same node are another size: still sent and moved.
  CHECK(count(res.ranges[1], MoveOutcome::Moved) == 2);
  CHECK(k.nodeOf(kPid, kBase + 4 * kMiB) == 0);
}

TEST_CASE("-EBUSY pages are retried after a back-off, then reported for the caller to back off") {
  MigratorConfig cfg;
  cfg.busyBackoffNs = 5'000'000;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.scriptPageError(kPid, kBase + 4 * kKiB, EBUSY, 1);   // busy once
  k.scriptPageError(kPid, kBase + 8 * kKiB, EBUSY, -1);  // always busy
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Moved) == 3);
  CHECK(count(r, MoveOutcome::Busy) == 1);
  CHECK(r.busy == std::vector<uint64_t>{kBase + 8 * kKiB});
  CHECK(res.stats.errnoPages.at(EBUSY) == 3);  // 2 in the first move, 1 in the retry
  const std::vector<std::string> golden = {
      "query pid=100 n=4 first=0x10000000 -> 0 [0,0,0,0]",
      "move pid=100 n=4 first=0x10000000 to=1 -> 0 [1,-16,-16,1]",
      "sleep 5000000ns",
      "query pid=100 n=2 first=0x10001000 -> 0 [0,0]",
      "move pid=100 n=2 first=0x10001000 to=1 -> 0 [1,-16]",
  };
  CHECK(m.log() == golden);
}

TEST_CASE("every address of a THP: later subpages are -EBUSY, the THP moves whole") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 2 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 2 * kMiB, 0);
  int status[3] = {};
  void* addrs[3] = {reinterpret_cast<void*>(kBase), reinterpret_cast<void*>(kBase + 4096),
                    reinterpret_cast<void*>(kBase + 8192)};
  int nodes[3] = {1, 1, 1};
  CHECK(k.movePages(kPid, 3, addrs, nodes, status, 0) == 0);
  CHECK(status[0] == 1);
  CHECK(status[1] == -EBUSY);
  CHECK(status[2] == -EBUSY);
  CHECK(k.nodeOf(kPid, kBase + kMiB) == 1);
}

TEST_CASE("a positive return: unreached statuses are not trusted, pages are re-queried") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.scriptPartialReturn(0, 1);  // the kernel handles 1 page and returns 3
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Moved) == 1);
  CHECK(count(r, MoveOutcome::NotMigrated) == 3);
  CHECK(res.stats.partialReturns == 1);
  CHECK(res.stats.partialPages == 3);
  CHECK(res.stats.pagesMoved == 1);
  const std::vector<std::string> golden = {
      "query pid=100 n=4 first=0x10000000 -> 0 [0,0,0,0]",
      "move pid=100 n=4 first=0x10000000 to=1 -> 3 [1,?,?,?]",
      "query pid=100 n=4 first=0x10000000 -> 0 [1,0,0,0]",
  };
  CHECK(m.log() == golden);
}

TEST_CASE("a positive return: statuses the kernel did write are kept, not re-queried away") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.scriptPageError(kPid, kBase, EBUSY, 1);  // busy once (an RDMA pin being released)
  k.scriptPartialReturn(0, 2);               // the kernel handles 2 pages and returns 2
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  // status[0] == -EBUSY was written: the page is busy (retried after the back-off, then moved),
  // not "not migrated" because the re-query finds it on its old node.
  CHECK(count(r, MoveOutcome::Moved) == 2);
  CHECK(count(r, MoveOutcome::NotMigrated) == 2);
  CHECK(count(r, MoveOutcome::Busy) == 0);
  CHECK(res.stats.errnoPages.at(EBUSY) == 1);
  CHECK(k.nodeOf(kPid, kBase) == 1);
  CHECK(countLines(m.log(), "sleep ") == 1);
}

TEST_CASE("denied, other per-page errnos and failed calls are counted per errno") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 16 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.scriptPageError(kPid, kBase, EACCES);
  k.scriptPageError(kPid, kBase + 4 * kKiB, EPERM);
  k.scriptPageError(kPid, kBase + 8 * kKiB, EINVAL);
  auto res = m.execute({range(kBase, 16 * kKiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Denied) == 2);
  CHECK(count(r, MoveOutcome::OtherError) == 1);
  CHECK(count(r, MoveOutcome::Moved) == 1);
  CHECK(res.stats.errnoPages == std::map<int, uint64_t>{{EPERM, 1}, {EACCES, 1}, {EINVAL, 1}});

  // A node that does not exist fails the whole call (-ENODEV): the pages are OtherError.
  k.setNodes({0, 1});
  auto bad = m.execute({range(kBase, 16 * kKiB, 5)}, kNoDeadline);
  CHECK(count(bad.ranges[0], MoveOutcome::OtherError) == 4);
  CHECK(bad.stats.failedCalls == 1);
  CHECK(bad.stats.errnoCalls.at(ENODEV) == 1);
}

TEST_CASE("deadline and stop flag are checked between calls") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 2;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 32 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 32 * kKiB, 0);

  auto none = m.execute({range(kBase, 32 * kKiB, 1)}, m.nowNs());
  CHECK(none.stats.deadlineReached);
  CHECK(count(none.ranges[0], MoveOutcome::NotAttempted) == 8);
  CHECK(m.log().empty());

  std::atomic<bool> stop{false};
  k.beforeCall(1, [&stop] { stop = true; });  // during the first call pair
  auto some = m.execute({range(kBase, 32 * kKiB, 1)}, kNoDeadline, &stop);
  CHECK(some.stats.stopped);
  CHECK(count(some.ranges[0], MoveOutcome::Moved) == 2);
  CHECK(count(some.ranges[0], MoveOutcome::NotAttempted) == 6);
}

TEST_CASE("the per-direction byte budget paces calls and respects the deadline") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 64;             // 256 KiB per call
  cfg.demoteBytesPerSecond = 1 * kMiB;  // promote unlimited
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 2 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 1 * kMiB, 0);
  k.populate(kPid, kBase + 1 * kMiB, 1 * kMiB, 1);
  // 1 MiB of demotion (node 0 -> 1) at 1 MiB/s: 4 calls of 256 KiB, 3 of them wait 0.25 s.
  const int64_t t0 = m.nowNs();
  auto res = m.execute({range(kBase, 1 * kMiB, 1, kPid, Direction::Demote)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 256);
  CHECK(countLines(m.log(), "sleep") == 3);
  CHECK(m.nowNs() - t0 >= 750'000'000);
  // Promotion has no budget: no sleeps.
  k.clearLog();
  auto up =
      m.execute({range(kBase + 1 * kMiB, 1 * kMiB, 0, kPid, Direction::Promote)}, kNoDeadline);
  CHECK(count(up.ranges[0], MoveOutcome::Moved) == 256);
  CHECK(countLines(m.log(), "sleep") == 0);
  // A deadline shorter than the wait leaves the rest not attempted.
  k.clearLog();
  auto late =
      m.execute({range(kBase, 1 * kMiB, 0, kPid, Direction::Demote)}, m.nowNs() + 100'000'000);
  CHECK(late.stats.deadlineReached);
  CHECK(count(late.ranges[0], MoveOutcome::NotAttempted) > 0);
  CHECK(count(late.ranges[0], MoveOutcome::Moved) +
            count(late.ranges[0], MoveOutcome::NotAttempted) ==
        256);
}

TEST_CASE("each move call is recorded with its own time and direction, waits and queries apart") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 64;             // 256 KiB per call
  cfg.demoteBytesPerSecond = 1 * kMiB;  // demotion waits 0.25 s before each call after the first
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 2 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 1 * kMiB, 0);
  k.populate(kPid, kBase + 1 * kMiB, 1 * kMiB, 1);
  // One pid, 512 KiB down then 128 KiB up: the pages would fit one call of 64 addresses per
  // direction change, but a call carries one direction only.
  auto res = m.execute({range(kBase, 512 * kKiB, 1, kPid, Direction::Demote),
                        range(kBase + 1 * kMiB, 128 * kKiB, 0, kPid, Direction::Promote)},
                       kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 128);
  CHECK(count(res.ranges[1], MoveOutcome::Moved) == 32);
  const auto& calls = res.stats.moveCallRecords;
  REQUIRE(calls.size() == res.stats.moveCalls);
  REQUIRE(calls.size() == 3);  // 256 KiB + 256 KiB down, 128 KiB up
  CHECK(calls[0].direction == Direction::Demote);
  CHECK(calls[1].direction == Direction::Demote);
  CHECK(calls[2].direction == Direction::Promote);
  CHECK(calls[0].bytesSent == 256 * kKiB);
  CHECK(calls[2].bytesSent == 128 * kKiB);
  int64_t inCalls = 0;
  for (const auto& c : calls) {
    CHECK(c.wallNs > 0);
    CHECK(c.wallNs <= res.stats.maxCallNs);
    CHECK(c.kernelCpuNs > 0);
    inCalls += c.wallNs;
  }
  // The batch's wall time holds the 0.25 s wait and the status queries; the calls do not.
  CHECK(countLines(m.log(), "sleep") == 1);
  CHECK(res.stats.wallNs > inCalls + 200'000'000);  // 0.25 s less what the first call refilled
}

TEST_CASE("limits set between batches (a config reload) pace the next batch") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 64;             // 256 KiB per call
  cfg.demoteBytesPerSecond = 1 * kMiB;  // 1 MiB of demotion: 3 waits of 0.25 s
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 1 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 1 * kMiB, 0);
  auto demote = [&](NodeId to) {
    k.clearLog();
    const int64_t t0 = m.nowNs();
    auto r = m.execute({range(kBase, 1 * kMiB, to, kPid, Direction::Demote)}, kNoDeadline);
    CHECK(count(r.ranges[0], MoveOutcome::Moved) == 256);
    return m.nowNs() - t0;
  };
  CHECK(demote(1) >= 750'000'000);
  CHECK(countLines(m.log(), "sleep") == 3);

  m.setLimits({20'000'000, 0, 0});  // no budget: no waits
  CHECK(m.engine().config().demoteBytesPerSecond == 0);
  demote(0);
  CHECK(countLines(m.log(), "sleep") == 0);

  m.setLimits({20'000'000, 0, 16 * kMiB});  // 16 MiB/s: the bucket (one second) covers 1 MiB
  CHECK(m.engine().config().demoteBytesPerSecond == 16 * kMiB);
  m.kernel().sleepUntilNs(m.nowNs() + 1'000'000'000, nullptr);  // a tick later: bucket full
  CHECK(demote(1) < 250'000'000);
  CHECK(countLines(m.log(), "sleep") == 0);

  m.setLimits({5'000'000, 0, 0});
  CHECK(m.engine().config().callLatencyTargetNs == 5'000'000);
}

TEST_CASE("a stop during a rate-budget wait ends the wait, and the rest is not attempted") {
  MigratorConfig cfg;
  cfg.maxPagesPerCall = 64;             // 256 KiB per call
  cfg.demoteBytesPerSecond = 1 * kMiB;  // each call after the first waits 0.25 s
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 1 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 1 * kMiB, 0);
  // The signal thread's stop arrives 50 ms into the first budget wait.
  std::atomic<bool> stop{false};
  int64_t stopAt = -1;
  k.duringSleep = [&](int64_t now) {
    if (stopAt < 0) stopAt = now + 50'000'000;
    if (now >= stopAt) stop.store(true);
  };
  const int64_t t0 = m.nowNs();
  auto res = m.execute({range(kBase, 1 * kMiB, 1, kPid, Direction::Demote)}, kNoDeadline, &stop);
  CHECK(res.stats.stopped);
  CHECK_FALSE(res.stats.deadlineReached);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 64);  // the first call only
  CHECK(count(res.ranges[0], MoveOutcome::NotAttempted) == 192);
  CHECK(countLines(m.log(), "move pid=100") == 1);
  // The wait ended at the first look at the flag after it was raised, not after 0.25 s.
  CHECK(countLines(m.log(), "sleep") == 1);
  CHECK(m.log().back().find(": stopped") != std::string::npos);
  CHECK(m.nowNs() <= stopAt + kStopPollNs);
  CHECK(m.nowNs() - t0 < 250'000'000);
}

TEST_CASE("a stop during the busy back-off ends the back-off, and the busy pages stay Busy") {
  MigratorConfig cfg;
  cfg.busyBackoffNs = 1'000'000'000;  // a long back-off, to be cut short
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.map(kPid, kBase, 64 * 4096, FakeBacking::Base);
  k.populate(kPid, kBase, 64 * 4096, 0);
  k.scriptPageError(kPid, kBase, EBUSY);
  std::atomic<bool> stop{false};
  k.duringSleep = [&](int64_t) { stop.store(true); };
  auto res = m.execute({range(kBase, 64 * 4096, 1)}, kNoDeadline, &stop);
  CHECK(res.stats.stopped);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 63);
  CHECK(count(res.ranges[0], MoveOutcome::Busy) == 1);
  CHECK(countLines(m.log(), "move pid=100") == 1);  // no retry call after the stop
  CHECK(m.nowNs() < 1'000'000'000);
}

TEST_CASE("call size adapts to the latency target from measured time per byte") {
  MigratorConfig cfg;
  cfg.callLatencyTargetNs = 1'000'000;  // 1 ms
  cfg.initialBytesPerCall = 4 * kMiB;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.nsPerByteMoved = 1;  // ~1 GB/s
  k.map(kPid, kBase, 8 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 8 * kMiB, 0);
  CHECK(m.engine().bytesPerCall() == 4 * kMiB);
  auto res = m.execute({range(kBase, 8 * kMiB, 1)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2048);
  const uint64_t b = m.engine().bytesPerCall();
  CHECK(b > 900'000);
  CHECK(b <= 1'000'000);
  CHECK(countLines(m.log(), "move pid=100 n=1024") == 1);  // the first call, unmeasured
  CHECK(res.stats.moveCalls > 4);
  CHECK(res.stats.maxCallNs > 0);
}

TEST_CASE("a copy engine's minimum batch floors the call size above the latency target's") {
  MigratorConfig cfg;
  cfg.callLatencyTargetNs = 1'000'000;  // 1 ms: ~1 MB per call at 1 ns per byte
  cfg.initialBytesPerCall = 4 * kMiB;
  ModelKernelMigrator m(cfg);
  auto& k = m.kernel();
  k.nsPerByteMoved = 1;
  k.map(kPid, kBase, 8 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 8 * kMiB, 0);
  m.engine().setMinBytesPerCall(2 * kMiB);  // min_batch_bytes of kernel-patches/ patch 3
  auto res = m.execute({range(kBase, 8 * kMiB, 1)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2048);
  CHECK(m.engine().bytesPerCall() == 2 * kMiB);
  // 4 MiB unmeasured first, then 2 MiB (512 base pages) calls instead of ~1 MB ones.
  CHECK(countLines(m.log(), "move pid=100 n=1024") == 1);
  CHECK(countLines(m.log(), "move pid=100 n=512") == 2);
  CHECK(res.stats.moveCalls == 3);
  m.engine().setMinBytesPerCall(0);  // offload turned off: the latency target rules again
  CHECK(m.engine().bytesPerCall() <= 1'000'000);
}

TEST_CASE("locate on the model equals the naive per-base-page query") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  // Base pages on two nodes with holes; a fully present base VMA; THP partly present;
  // hugetlb partly present; unmapped gaps between them.
  k.map(kPid, kBase, 64 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase, 16 * kKiB, 0);
  k.populate(kPid, kBase + 32 * kKiB, 16 * kKiB, 1);
  k.map(kPid, kBase + 1 * kMiB, 64 * kKiB, FakeBacking::Base);
  k.populate(kPid, kBase + 1 * kMiB, 64 * kKiB, 1);
  k.map(kPid, kBase + 4 * kMiB, 8 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase + 4 * kMiB, 2 * kMiB, 0);
  k.populate(kPid, kBase + 8 * kMiB, 2 * kMiB, 1);
  k.map(kPid, kBase + 16 * kMiB, 8 * kMiB, FakeBacking::Hugetlb, 2 * kMiB);
  k.populate(kPid, kBase + 20 * kMiB, 2 * kMiB, 1);

  std::vector<AddressRange> ranges = {{kBase, 24 * kMiB}, {kBase + 4 * kMiB + 8 * kKiB, 12 * kKiB}};
  auto loc = m.locate(kPid, ranges);
  REQUIRE(loc.ok());
  auto naive = naiveLocate(k, kPid, ranges);
  REQUIRE(naive.ok());
  CHECK(loc->perBasePage(4 * kKiB) == naive.value());
  CHECK(naive->size() == 24 * kMiB / (4 * kKiB) + 3);
  CHECK(loc->skippedBytes == 64 * kKiB);  // the fully present base VMA
  // Queries: 16 for the partly present base VMA; 1 per THP chunk (a not-present first address
  // is settled by pagemap: 512 entries per chunk); 1 per hugetlb page; 1 for the second range.
  CHECK(loc->queriedPages == 16 + 4 + 4 + 1);
  CHECK(loc->pagemapPages == 2 * 512);
  // THP chunks come back as 2 MiB runs.
  bool sawThp = false;
  for (const auto& r : loc->runs)
    if (r.pageSize == 2 * kMiB && r.status == 1 && r.start == kBase + 8 * kMiB) sawThp = true;
  CHECK(sawThp);

  // A zero page in a not-present THP chunk answers -EFAULT: that chunk is queried per base page.
  k.mapZeroPage(kPid, kBase + 10 * kMiB + 12 * kKiB);
  auto withZero = m.locate(kPid, ranges);
  REQUIRE(withZero.ok());
  auto naiveZero = naiveLocate(k, kPid, ranges);
  REQUIRE(naiveZero.ok());
  CHECK(withZero->perBasePage(4 * kKiB) == naiveZero.value());
  CHECK(std::count(naiveZero->begin(), naiveZero->end(), -EFAULT) ==
        std::count(naive->begin(), naive->end(), -EFAULT) + 1);
  CHECK(withZero->queriedPages == 16 + 4 + 512 + 4 + 1);

  k.exitPid(kPid);
  auto gone = m.locate(kPid, ranges);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ENOENT);
}

TEST_CASE("locate on sparse memory reads pagemap and queries only mapped pages") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 64 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase + 4 * kKiB, 4 * kKiB, 1);
  k.populate(kPid, kBase + 20 * kMiB, 8 * kKiB, 0);
  k.mapZeroPage(kPid, kBase + 40 * kMiB);
  const std::vector<AddressRange> ranges = {{kBase, 64 * kMiB}};
  auto loc = m.locate(kPid, ranges);
  REQUIRE(loc.ok());
  auto naive = naiveLocate(k, kPid, ranges);
  REQUIRE(naive.ok());
  CHECK(loc->perBasePage(4 * kKiB) == naive.value());
  CHECK(loc->queriedPages == 4);  // 3 present pages and the zero page
  CHECK(loc->pagemapPages == 64 * kMiB / (4 * kKiB));
  CHECK(loc->unscanned.empty());

  MigratorConfig small;
  small.locateMaxScanBytes = 1 * kMiB;
  ModelKernelMigrator capped(small);
  capped.kernel().map(kPid, kBase, 64 * kMiB, FakeBacking::Base);
  capped.kernel().populate(kPid, kBase, 4 * kKiB, 0);
  auto c = capped.locate(kPid, {{kBase - 8 * kKiB, 64 * kMiB + 8 * kKiB}});
  REQUIRE(c.ok());
  REQUIRE(c->unscanned.size() == 1);
  CHECK(c->unscanned[0].start == kBase);
  CHECK(c->unscanned[0].length == 64 * kMiB);
  CHECK(c->perBasePage(4 * kKiB) == std::vector<int>{-EFAULT, -EFAULT});  // the hole before it
}

TEST_CASE("locate reads base pages' nodes from their pagemap frames and queries the rest") {
  // The layout of "locate on the model equals the naive per-base-page query", with page frames
  // shown and a memory block map: exclusive pages of one node's block are answered from
  // pagemap; the zero page, a shared page and a page of an ambiguous block are queried.
  auto build = [](ModelKernelMigrator& m) {
    auto& k = m.kernel();
    k.map(kPid, kBase, 64 * kKiB, FakeBacking::Base);
    k.populate(kPid, kBase, 16 * kKiB, 0);
    k.populate(kPid, kBase + 32 * kKiB, 16 * kKiB, 1);
    k.map(kPid, kBase + 4 * kMiB, 8 * kMiB, FakeBacking::Thp);
    k.populate(kPid, kBase + 4 * kMiB, 2 * kMiB, 0);
    k.map(kPid, kBase + 16 * kMiB, 8 * kMiB, FakeBacking::Base);  // sparse
    k.populate(kPid, kBase + 16 * kMiB, 8 * kKiB, 1);
    k.mapZeroPage(kPid, kBase + 20 * kMiB);
  };
  const std::vector<AddressRange> ranges = {{kBase, 24 * kMiB},
                                            {kBase + 4 * kMiB + 8 * kKiB, 12 * kKiB}};
  ModelKernelMigrator m;
  build(m);
  auto& k = m.kernel();
  k.setPfns(FakePageSystem::Pfns::Shown);
  auto naive = naiveLocate(k, kPid, ranges);
  REQUIRE(naive.ok());
  auto loc = m.locate(kPid, ranges);
  REQUIRE(loc.ok());
  CHECK(loc->perBasePage(4 * kKiB) == naive.value());
  // The base VMA (16 pages, 8 present: half, so not sparse) and the sparse one (2 pages and the
  // zero page) go through pagemap; the THP VMA is queried one head per chunk (4), the chunks whose
  // head is not present settled by pagemap (3 x 512), and the second range by its chunk's head.
  CHECK(loc->pagemapPages == 16 + 3 * 512 + 8 * kMiB / (4 * kKiB));
  CHECK(loc->pfnPages == 8 + 2);
  CHECK(loc->queriedPages == 4 + 1 + 1);  // THP heads, the zero page, the second range
  CHECK(k.blockMapReads() == 1);

  // A page another process maps too, and node 1's block listed under two nodes: queried.
  k.sharePage(kPid, kBase);
  k.setAmbiguousBlock(1);
  k.sleepUntilNs(k.nowNs() + 2'000'000'000, nullptr);  // past the block map's 1 s age
  auto loc2 = m.locate(kPid, ranges);
  REQUIRE(loc2.ok());
  CHECK(loc2->perBasePage(4 * kKiB) == naive.value());
  CHECK(k.blockMapReads() == 2);
  CHECK(loc2->pfnPages == 3);  // node 0's exclusive base pages
  CHECK(loc2->queriedPages == 1 + 4 + 2 + 1 + 4 + 1);

  // Frames hidden (no CAP_SYS_ADMIN): every present page is queried, the answers the same.
  k.setPfns(FakePageSystem::Pfns::Hidden);
  k.sleepUntilNs(k.nowNs() + 2'000'000'000, nullptr);
  auto hidden = m.locate(kPid, ranges);
  REQUIRE(hidden.ok());
  CHECK(hidden->perBasePage(4 * kKiB) == naive.value());
  CHECK(hidden->pfnPages == 0);
  CHECK(hidden->queriedPages == 8 + 3 + 4 + 1);
}

TEST_CASE("execute on sparse memory sends only mapped pages, an empty VMA costs no call") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 64 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase + 4 * kKiB, 4 * kKiB, 0);
  k.populate(kPid, kBase + 20 * kMiB, 8 * kKiB, 0);
  k.mapZeroPage(kPid, kBase + 40 * kMiB);
  k.map(kPid, kBase + 128 * kMiB, 64 * kMiB, FakeBacking::Base);  // nothing resident
  auto res =
      m.execute({range(kBase, 64 * kMiB, 1), range(kBase + 128 * kMiB, 64 * kMiB, 1)}, kNoDeadline);
  const auto& r = res.ranges[0];
  CHECK(count(r, MoveOutcome::Moved) == 3);
  CHECK(count(r, MoveOutcome::NotPresent) == 64 * kMiB / (4 * kKiB) - 3);  // incl. zero page
  CHECK_FALSE(r.dropped);
  CHECK(count(res.ranges[1], MoveOutcome::NotPresent) == 64 * kMiB / (4 * kKiB));
  const std::vector<std::string> golden = {
      "pagemap pid=100 0x10000000 n=16384",
      "query pid=100 n=4 first=0x10001000 -> 0 [0,0,0,-14]",
      "move pid=100 n=3 first=0x10001000 to=1 -> 0 [1,1,1]",
  };
  CHECK(m.log() == golden);
}

TEST_CASE("a range planned in base pages sends every base page address of its THPs") {
  // page_granularity = "base": the arbiter plans THP memory with the base page size; the
  // addresses sent must be every base page, not one per THP (which "huge" and 0 send).
  auto firstMove = [](uint64_t pageSize) {
    ModelKernelMigrator m;
    auto& k = m.kernel();
    k.map(kPid, kBase, 2 * kMiB, FakeBacking::Thp);
    k.populate(kPid, kBase, 2 * kMiB, 0);
    MoveRange r = range(kBase, 2 * kMiB, 1);
    r.pageSize = pageSize;
    auto res = m.execute({r}, kNoDeadline);
    CHECK(res.ranges.size() == 1);
    CHECK(k.nodeOf(kPid, kBase + kMiB) == 1);  // moved either way
    for (const std::string& l : m.log())
      if (l.rfind("move ", 0) == 0) return l.substr(0, l.find(" first="));
    return std::string("no move");
  };
  CHECK(firstMove(0) == "move pid=100 n=1");
  CHECK(firstMove(2 * kMiB) == "move pid=100 n=1");
  CHECK(firstMove(4 * kKiB) == "move pid=100 n=512");
}

TEST_CASE("a split THP is base pages to the model kernel: smaps and move_pages see 4 KiB pages") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 4 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 4 * kMiB, 0);
  k.splitThp(kPid, kBase + 2 * kMiB + 12345);
  auto sm = k.smaps(kPid);
  REQUIRE(sm.ok());
  REQUIRE(sm->size() == 1);
  CHECK(sm->at(0).rss == 4 * kMiB);
  CHECK(sm->at(0).anonHugePages == 2 * kMiB);  // one THP left
  // The split chunk's head address moves one base page, the THP's head moves 2 MiB.
  void* pages[2] = {reinterpret_cast<void*>(kBase), reinterpret_cast<void*>(kBase + 2 * kMiB)};
  int nodes[2] = {1, 1};
  int status[2] = {0, 0};
  REQUIRE(k.movePages(kPid, 2, pages, nodes, status, 0) == 0);
  CHECK(k.nodeOf(kPid, kBase + 2 * kMiB - 4096) == 1);
  CHECK(k.nodeOf(kPid, kBase + 2 * kMiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 2 * kMiB + 4096) == 0);
  auto nm = k.numaMaps(kPid);
  REQUIRE(nm.ok());
  CHECK(nm->at(0).pagesPerNode.at(1) == 512 + 1);
  CHECK(nm->at(0).pagesPerNode.at(0) == 511);
}

TEST_CASE("a partly huge VMA is moved per 2 MiB chunk: THP heads whole, base pages one by one") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 8 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 8 * kMiB, 0);
  k.splitThp(kPid, kBase + 2 * kMiB);  // chunks 1 and 3 are base pages, 0 and 2 are THPs
  k.splitThp(kPid, kBase + 6 * kMiB);
  auto res = m.execute({range(kBase, 8 * kMiB, 1)}, kNoDeadline);
  REQUIRE(res.ranges.size() == 1);
  for (uint64_t a = kBase; a < kBase + 8 * kMiB; a += 4 * kKiB)
    REQUIRE(k.nodeOf(kPid, a) == 1);
  CHECK(res.ranges[0].bytesMoved == 8 * kMiB);  // not 2 x 4 KiB for the THPs
  CHECK(res.stats.bytesMoved == 8 * kMiB);
  CHECK(count(res.ranges[0], MoveOutcome::Busy) == 0);  // no 511 -EBUSY tails per THP
  CHECK(res.ranges[0].busy.empty());
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2 + 2 * 512);
}

TEST_CASE("execute reads each pid's smaps once per call, and not at all when it was shared") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  for (pid_t p : {kPid, kPid + 1}) {
    k.map(p, kBase, 32 * kMiB, FakeBacking::Thp);
    k.populate(p, kBase, 32 * kMiB, 1);
  }
  // Eight ranges of two processes, interleaved.
  std::vector<MoveRange> batch;
  for (uint64_t i = 0; i < 8; ++i)
    batch.push_back(
        range(kBase + (i / 2) * 2 * kMiB, 2 * kMiB, 0, kPid + static_cast<pid_t>(i % 2)));
  auto res = m.execute(batch, kNoDeadline);
  CHECK(res.stats.pagesMoved == 8);
  CHECK(k.smapsReads() == 2);

  // The caller's read of kPid (the engine's, this tick) is planned against; kPid + 1 is read.
  auto shared = k.smaps(kPid);
  REQUIRE(shared.ok());
  m.reads()->setSmaps(kPid, std::make_shared<const std::vector<sys::SmapsVma>>(shared.value()));
  batch.clear();
  for (uint64_t i = 0; i < 8; ++i)
    batch.push_back(
        range(kBase + (4 + i / 2) * 2 * kMiB, 2 * kMiB, 0, kPid + static_cast<pid_t>(i % 2)));
  const uint64_t before = k.smapsReads();
  res = m.execute(batch, kNoDeadline);
  CHECK(res.stats.pagesMoved == 8);
  CHECK(k.smapsReads() - before == 1);
  // A shared read that is out of date by the move: the unmapped part answers -EFAULT, and the
  // range is gone, as when the unmap happens between a fresh read and the move.
  k.unmap(kPid, kBase + 24 * kMiB, 2 * kMiB);
  res = m.execute({range(kBase + 24 * kMiB, 2 * kMiB, 0)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Gone) == 1);
  CHECK(res.ranges[0].dropped);
  m.reads()->clear();
  res = m.execute({range(kBase + 28 * kMiB, 2 * kMiB, 0)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 1);
  CHECK(k.smapsReads() - before == 2);
}

TEST_CASE(
    "execute plans on a shared layout where its VMAs had no THP, and never takes its Rss for "
    "today's") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 8 * kMiB, FakeBacking::Base);
  k.populate(kPid, kBase, 8 * kMiB, 0);
  k.map(kPid, kBase + 16 * kMiB, 8 * kMiB, FakeBacking::Base);  // nothing resident yet
  k.map(kPid, kBase + 32 * kMiB, 4 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase + 32 * kMiB, 4 * kMiB, 0);
  auto old = k.smaps(kPid);  // the engine's last full read
  REQUIRE(old.ok());
  REQUIRE(old->at(1).rss == 0);
  // Since that read: three pages of the empty VMA were faulted in.
  k.populate(kPid, kBase + 16 * kMiB + 4 * kKiB, 4 * kKiB, 0);
  k.populate(kPid, kBase + 20 * kMiB, 8 * kKiB, 0);
  m.reads()->setLayout(kPid, std::make_shared<const std::vector<sys::SmapsVma>>(old.value()));
  const uint64_t reads = k.smapsReads();

  auto res =
      m.execute({range(kBase, 2 * kMiB, 1), range(kBase + 16 * kMiB, 8 * kMiB, 1)}, kNoDeadline);
  CHECK(k.smapsReads() == reads);  // planned on the layout
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 512);
  CHECK(count(res.ranges[1], MoveOutcome::Moved) == 3);  // today's pages, not the old Rss 0
  CHECK(count(res.ranges[1], MoveOutcome::NotPresent) == 8 * kMiB / (4 * kKiB) - 3);
  CHECK(k.nodeOf(kPid, kBase + 2 * kMiB - 4 * kKiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 16 * kMiB + 4 * kKiB) == 1);
  CHECK(k.nodeOf(kPid, kBase + 20 * kMiB + 4 * kKiB) == 1);
  CHECK(countLines(m.log(), "pagemap ") == 1);  // the once-empty VMA: today's mapped pages

  // A VMA that had THP then needs today's AnonHugePages: read afresh, once for the call.
  res = m.execute({range(kBase + 32 * kMiB, 4 * kMiB, 1), range(kBase + 2 * kMiB, 2 * kMiB, 1)},
                  kNoDeadline);
  CHECK(k.smapsReads() - reads == 1);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2);
  CHECK(count(res.ranges[1], MoveOutcome::Moved) == 512);

  // A smaps shared for this tick comes first; clearing the reads forgets the layout.
  auto fresh = k.smaps(kPid);
  REQUIRE(fresh.ok());
  m.reads()->setSmaps(kPid, std::make_shared<const std::vector<sys::SmapsVma>>(fresh.value()));
  res = m.execute({range(kBase + 4 * kMiB, 2 * kMiB, 1)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 512);
  CHECK(k.smapsReads() - reads == 2);  // the test's own read only
  m.reads()->clear();
  res = m.execute({range(kBase + 6 * kMiB, 2 * kMiB, 1)}, kNoDeadline);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 512);
  CHECK(k.smapsReads() - reads == 3);
}

TEST_CASE("execute on a layout whose VMA had no THP then still moves a THP collapsed since") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 4 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 4 * kMiB, 0);
  auto old = k.smaps(kPid);
  REQUIRE(old.ok());
  std::vector<sys::SmapsVma> then = old.value();
  then.at(0).anonHugePages = 0;  // as read before khugepaged collapsed the VMA's pages
  m.reads()->setLayout(kPid, std::make_shared<const std::vector<sys::SmapsVma>>(then));
  const uint64_t reads = k.smapsReads();
  auto res = m.execute({range(kBase, 4 * kMiB, 1)}, kNoDeadline);
  CHECK(k.smapsReads() == reads);
  for (uint64_t a = kBase; a < kBase + 4 * kMiB; a += 4 * kKiB)
    REQUIRE(k.nodeOf(kPid, a) == 1);
  // The kernel's answers: each THP moves whole at its first address, and its other addresses,
  // isolated with it, answer -EBUSY; after one back-off they are on the target. Only the heads
  // count as moved (tierd's byte count is short by the tails here; the kernel's pgmigrate_success
  // is not), as when the collapse comes between a fresh smaps read and the call.
  const std::vector<std::string> golden = {
      "query pid=100 n=1024 first=0x10000000 -> 0",
      "move pid=100 n=1024 first=0x10000000 to=1 -> 0",
      "sleep 1000000ns",
      "query pid=100 n=1022 first=0x10001000 -> 0",
  };
  std::vector<std::string> calls;
  for (const std::string& l : m.log())
    calls.push_back(l.substr(0, l.find(" [")));
  CHECK(calls == golden);
  CHECK(count(res.ranges[0], MoveOutcome::Moved) == 2);
  CHECK(count(res.ranges[0], MoveOutcome::AlreadyThere) == 1022);
  CHECK(count(res.ranges[0], MoveOutcome::Busy) == 0);
  CHECK(res.ranges[0].busy.empty());
  CHECK_FALSE(res.ranges[0].dropped);
}

TEST_CASE("locate plans against a shared smaps instead of reading it") {
  ModelKernelMigrator m;
  auto& k = m.kernel();
  k.map(kPid, kBase, 8 * kMiB, FakeBacking::Thp);
  k.populate(kPid, kBase, 4 * kMiB, 0);
  k.populate(kPid, kBase + 4 * kMiB, 4 * kMiB, 1);  // two nodes: numa_maps alone cannot answer
  auto fresh = m.locate(kPid, {{kBase, 8 * kMiB}});
  REQUIRE(fresh.ok());
  CHECK(k.smapsReads() == 1);
  auto shared = k.smaps(kPid);
  REQUIRE(shared.ok());
  m.reads()->setSmaps(kPid, std::make_shared<const std::vector<sys::SmapsVma>>(shared.value()));
  auto again = m.locate(kPid, {{kBase, 8 * kMiB}});
  REQUIRE(again.ok());
  CHECK(k.smapsReads() == 2);  // the test's own read only
  CHECK(again->perBasePage(4096) == fresh->perBasePage(4096));
  CHECK(again->queryCalls == fresh->queryCalls);
}

// Host tests of the migration engine on this machine's real kernel (label `integration`): locate
// must equal the naive per-base-page query exactly, moves to the node a page is on report
// "already there" (this machine has one node), data never changes, a process that exits is
// survived. Small buffers only; speed is measured by `tierctl bench`, not here.
#include <doctest/doctest.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tests/unit/support/Skip.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/Parsers.h"

using namespace tierd;
using namespace tierd::migrate;

namespace {

const sys::SysRoot kLive = sys::SysRoot::live();
constexpr int64_t kHour = 3'600'000'000'000LL;

struct Mapping {
  char* p = nullptr;
  size_t len = 0;
  Mapping(size_t n, int extraFlags = 0) : len(n) {
    void* m =
        mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extraFlags, -1, 0);
    if (m != MAP_FAILED) p = static_cast<char*>(m);
  }
  ~Mapping() {
    if (p) munmap(p, len);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

/// 2 MiB-aligned window inside a larger mapping.
char* align2M(char* p) {
  uint64_t a = reinterpret_cast<uint64_t>(p);
  return reinterpret_cast<char*>((a + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB));
}

bool thpAvailable() {
  auto mode = kLive.readAttr("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!mode) return false;
  auto a = sys::parseBracketChoice(mode.value(), "thp");
  return a && a.value() != "never";
}

/// Whether a read fault on untouched private anonymous memory maps the shared zero page (huge:
/// the huge zero page of a THP-advised 2 MiB chunk) on this host, which move_pages(nodes=NULL)
/// answers with -EFAULT (mm/migrate.c do_pages_stat_array). Most kernels do; this machine's
/// 6.18.44-fc kernel allocates a real page instead (a read of 16384 fresh pages grew RSS by as
/// many), and move_pages then answers its node.
bool readFaultMapsZeroPage(bool huge) {
  Mapping m(4 * kMiB);
  if (!m.p) return false;
  char* a = align2M(m.p);
  if (madvise(a, 2 * kMiB, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) return false;
  volatile char sink = a[8 * kKiB];
  (void)sink;
  void* page = a + 8 * kKiB;
  int status = 0;
  return numa_move_pages(0, 1, &page, nullptr, &status, 0) == 0 && status == -EFAULT;
}

void checkLocateEqualsNaive(MovePagesMigrator& m, pid_t pid, uint64_t start, uint64_t len) {
  std::vector<AddressRange> ranges = {{start, len}};
  auto loc = m.locate(pid, ranges);
  REQUIRE(loc.ok());
  auto naive = naiveLocate(m.system(), pid, ranges);
  REQUIRE(naive.ok());
  CHECK(loc->perBasePage(m.system().basePageSize()) == naive.value());
}

uint64_t countStatus(const std::vector<int>& v, int s) {
  uint64_t n = 0;
  for (int x : v)
    n += x == s;
  return n;
}

}  // namespace

TEST_CASE("host: locate equals the naive query on base pages, with not-present and zero pages") {
  Mapping m(8 * kMiB);
  REQUIRE(m.p);
  REQUIRE(madvise(m.p, m.len, MADV_NOHUGEPAGE) == 0);
  for (size_t off = 0; off < 4 * kMiB; off += 4 * kKiB)
    m.p[off] = 1;
  // A read maps the zero page (move_pages answers -EFAULT), or on a kernel without one for
  // read faults a real page on this node.
  const bool zeroPage = readFaultMapsZeroPage(false);
  volatile char sink = m.p[6 * kMiB];
  (void)sink;
  MovePagesMigrator mig;
  const uint64_t base = mig.system().basePageSize();
  checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(m.p), m.len);
  auto naive = naiveLocate(mig.system(), getpid(), {{reinterpret_cast<uint64_t>(m.p), m.len}});
  REQUIRE(naive.ok());
  INFO("read faults map the zero page on this host: " << zeroPage);
  CHECK(countStatus(naive.value(), 0) == 4 * kMiB / base + (zeroPage ? 0 : 1));
  CHECK(countStatus(naive.value(), -EFAULT) == (zeroPage ? 1u : 0u));
  CHECK(countStatus(naive.value(), -ENOENT) == 4 * kMiB / base - 1);
  // Where this process sees page frames (CAP_SYS_ADMIN) and sysfs has the memory block map, the
  // written pages' nodes come from pagemap, not from queries.
  auto pm = mig.system().pagemap(getpid(), reinterpret_cast<uint64_t>(m.p), 1);
  REQUIRE(pm.ok());
  const bool framesShown = (pm.value()[0] & kPagemapPfnMask) != 0;
  const bool blockMap = mig.system().memoryBlockNodes().ok();
  INFO("page frames shown: " << framesShown << ", memory block map: " << blockMap);
  auto partial = mig.locate(getpid(), {{reinterpret_cast<uint64_t>(m.p), m.len}});
  REQUIRE(partial.ok());
  if (framesShown && blockMap) {
    // The read page: the zero page (never PM_MMAP_EXCLUSIVE) is queried, a real page is not.
    CHECK(partial->pfnPages == 4 * kMiB / base + (zeroPage ? 0u : 1u));
    CHECK(partial->queriedPages == (zeroPage ? 1u : 0u));
  } else {
    CHECK(partial->pfnPages == 0);
  }

  // Fully touched: answered from numa_maps without any query.
  for (size_t off = 0; off < m.len; off += base)
    m.p[off] = 2;
  auto loc = mig.locate(getpid(), {{reinterpret_cast<uint64_t>(m.p), m.len}});
  REQUIRE(loc.ok());
  CHECK(loc->skippedBytes == m.len);
  CHECK(loc->queriedPages == 0);
  checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(m.p), m.len);
}

TEST_CASE("host: locate equals the naive query on THP, one query per 2 MiB [hw]") {
  if (!thpAvailable()) {
    TIERD_SKIP("THP is disabled (transparent_hugepage/enabled = never)");
  }
  Mapping m(12 * kMiB);
  REQUIRE(m.p);
  char* a = align2M(m.p);
  REQUIRE(madvise(a, 8 * kMiB, MADV_HUGEPAGE) == 0);
  memset(a, 3, 4 * kMiB);             // 2 THPs
  memset(a + 6 * kMiB, 4, 2 * kMiB);  // a third one, with a hole before it
  MovePagesMigrator mig;
  checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(a), 8 * kMiB);
  // Unaligned sub-range inside a THP and across the hole.
  checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(a) + 1 * kMiB, 6 * kMiB);
  auto loc = mig.locate(getpid(), {{reinterpret_cast<uint64_t>(a), 8 * kMiB}});
  REQUIRE(loc.ok());
  uint64_t thpBytes = 0;
  for (const auto& r : loc->runs)
    if (r.pageSize == 2 * kMiB && r.status == 0) thpBytes += r.length;
  auto sm = sys::readSmaps(kLive, getpid());
  REQUIRE(sm.ok());
  for (const auto& v : sm.value())
    if (v.start <= reinterpret_cast<uint64_t>(a) && reinterpret_cast<uint64_t>(a) < v.end &&
        v.anonHugePages == 6 * kMiB && v.rss == 6 * kMiB) {
      CHECK(thpBytes == 6 * kMiB);    // all three THPs answered by one query each
      CHECK(loc->queriedPages == 4);  // one per chunk; the empty chunk settled by pagemap
      CHECK(loc->pagemapPages == 512);
    }
  // A read inside the empty chunk maps the (huge) zero page: move_pages answers -EFAULT there,
  // pagemap shows it present, locate falls back to per-base-page queries: still identical. (On
  // a kernel without a zero page for read faults, a real THP: identical as well.)
  const bool zeroPage = readFaultMapsZeroPage(true);
  volatile char z = a[4 * kMiB + 8 * kKiB];
  (void)z;
  checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(a), 8 * kMiB);
  auto naive = naiveLocate(mig.system(), getpid(), {{reinterpret_cast<uint64_t>(a), 8 * kMiB}});
  REQUIRE(naive.ok());
  INFO("read faults map a zero page on this host: " << zeroPage);
  CHECK((countStatus(naive.value(), -EFAULT) >= 1) == zeroPage);
}

TEST_CASE("host: locate equals the naive query on hugetlb (reserves 2 x 2 MiB, restores) [hw]") {
  const std::string nr = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
  const std::string fr = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";
  auto before = kLive.readAttr(nr);
  auto freeNow = kLive.readAttr(fr);
  if (!before || !freeNow) {
    TIERD_SKIP("no 2 MiB hugetlb pool");
  }
  uint64_t old = sys::parseU64(before.value(), nr).valueOr(0);
  uint64_t fre = sys::parseU64(freeNow.value(), fr).valueOr(0);
  bool raised = false;
  if (fre < 2) raised = kLive.write(nr, std::to_string(old + 2 - fre)).ok();
  struct Restore {
    bool on;
    std::string path;
    uint64_t value;
    ~Restore() {
      if (on) (void)kLive.write(path, std::to_string(value));
    }
  } restore{raised, nr, old};
  {
    Mapping m(4 * kMiB, MAP_HUGETLB);
    if (!m.p) {
      TIERD_SKIP(std::string("cannot reserve 2 MiB hugetlb pages (") + std::strerror(errno) + ")");
    }
    m.p[0] = 1;  // first huge page present, second not
    MovePagesMigrator mig;
    checkLocateEqualsNaive(mig, getpid(), reinterpret_cast<uint64_t>(m.p), m.len);
    auto loc = mig.locate(getpid(), {{reinterpret_cast<uint64_t>(m.p), m.len}});
    REQUIRE(loc.ok());
    CHECK(loc->queriedPages == 2);
    REQUIRE(loc->runs.size() == 2);
    CHECK(loc->runs[0].status == 0);
    CHECK(loc->runs[0].pageSize == 2 * kMiB);
    CHECK(loc->runs[1].status == -ENOENT);

    // Moving it to its own node: one address per huge page, already there, data intact.
    MoveRange r{getpid(), reinterpret_cast<uint64_t>(m.p), m.len, 0, 0, Direction::Promote};
    auto res = mig.execute({r}, mig.nowNs() + kHour);
    CHECK(res.ranges[0].outcomes[MoveOutcome::AlreadyThere] == 1);
    CHECK(res.ranges[0].outcomes[MoveOutcome::NotPresent] == 1);
    CHECK(m.p[0] == 1);
  }
}

TEST_CASE("host: move to this machine's one node reports already there, data intact") {
  Mapping m(12 * kMiB);
  REQUIRE(m.p);
  char* a = align2M(m.p);
  const bool thp = thpAvailable();
  if (thp) REQUIRE(madvise(a, 4 * kMiB, MADV_HUGEPAGE) == 0);
  REQUIRE(madvise(a + 4 * kMiB, 4 * kMiB, MADV_NOHUGEPAGE) == 0);
  for (size_t i = 0; i < 6 * kMiB; ++i)
    a[i] = static_cast<char>(i * 7);
  MovePagesMigrator mig;
  const uint64_t base = mig.system().basePageSize();
  MoveRange r{getpid(), reinterpret_cast<uint64_t>(a), 8 * kMiB, 0, 0, Direction::Promote};
  auto res = mig.execute({r}, mig.nowNs() + kHour);
  const auto& rr = res.ranges[0];
  auto sm = sys::readSmaps(kLive, getpid());
  REQUIRE(sm.ok());
  uint64_t thpBytes = 0;
  for (const auto& v : sm.value())
    if (v.start <= reinterpret_cast<uint64_t>(a) && reinterpret_cast<uint64_t>(a) < v.end)
      thpBytes = v.anonHugePages == v.rss ? v.anonHugePages : 0;
  if (thpBytes == 4 * kMiB)
    CHECK(rr.outcomes[MoveOutcome::AlreadyThere] == 2 + 2 * kMiB / base);  // 2 THPs + base
  CHECK(rr.outcomes[MoveOutcome::NotPresent] == 2 * kMiB / base);
  CHECK(rr.outcomes[MoveOutcome::Moved] == 0);
  CHECK(res.stats.moveCalls == 0);
  CHECK_FALSE(rr.dropped);
  for (size_t i = 0; i < 6 * kMiB; ++i)
    if (a[i] != static_cast<char>(i * 7)) FAIL("data changed at offset " << i);

  // A raw move of a base page to node 0 answers status 0 (the node it is on).
  void* page = a + 4 * kMiB;
  int node = 0;
  int status = -1;
  CHECK(numa_move_pages(0, 1, &page, &node, &status, MPOL_MF_MOVE) == 0);
  CHECK(status == 0);
}

TEST_CASE("host: another process's pages, and that process exiting") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    void* p = mmap(nullptr, 1 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 5, 512 * kKiB);
    uint64_t addr = reinterpret_cast<uint64_t>(p);
    if (write(fds[1], &addr, sizeof addr) != sizeof addr) _exit(1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  uint64_t addr = 0;
  REQUIRE(read(fds[0], &addr, sizeof addr) == sizeof addr);
  close(fds[0]);
  MovePagesMigrator mig;
  checkLocateEqualsNaive(mig, child, addr, 1 * kMiB);
  const uint64_t base = mig.system().basePageSize();
  MoveRange r{child, addr, 1 * kMiB, 0, 0, Direction::Demote};
  auto res = mig.execute({r}, mig.nowNs() + kHour);
  CHECK(res.ranges[0].outcomes[MoveOutcome::AlreadyThere] == 512 * kKiB / base);
  CHECK(res.ranges[0].outcomes[MoveOutcome::NotPresent] == 512 * kKiB / base);

  kill(child, SIGKILL);
  int st = 0;
  REQUIRE(waitpid(child, &st, 0) == child);
  auto gone = mig.execute({r}, mig.nowNs() + kHour);
  CHECK(gone.ranges[0].dropped);
  CHECK(gone.ranges[0].outcomes[MoveOutcome::Gone] == 1 * kMiB / base);
  auto loc = mig.locate(child, {{addr, 1 * kMiB}});
  REQUIRE_FALSE(loc.ok());
  CHECK(loc.error().code == ENOENT);
}

TEST_CASE("host: libnuma's warning hook is ours: it counts, never prints or exits") {
  (void)makeLinuxPageSystem();
  const uint64_t before = libnumaHookCalls();
  CHECK(numa_parse_nodestring("not-a-node-list") == nullptr);
  CHECK(libnumaHookCalls() == before + 1);
}

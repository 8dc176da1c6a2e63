#include "tierd/migrate/Bench.h"

#include <linux/mman.h>
#include <numa.h>
#include <numaif.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>

#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/Parsers.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::migrate {
namespace {

double nowSeconds() {
  return static_cast<double>(monotonicNs()) / 1e9;
}

// The thread's kernel CPU seconds. runMigrateBench checks once that getrusage works here
// (threadSystemCpuNs is an error only where RUSAGE_THREAD is missing), so a later 0 never hides
// a failure.
double threadKernelSeconds() {
  return static_cast<double>(threadSystemCpuNs().valueOr(0)) / 1e9;
}

uint64_t pageBytes(BenchPage p) {
  switch (p) {
    case BenchPage::Base4k:
      return 4 * kKiB;
    case BenchPage::Thp:
      return 2 * kMiB;
    case BenchPage::Hugetlb2M:
      return 2 * kMiB;
    case BenchPage::Hugetlb1G:
      return 1 * kGiB;
  }
  return 4 * kKiB;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Order-dependent 64-bit checksum of the buffer (FNV-style over 8-byte words).
uint64_t checksum(const char* p, uint64_t n) {
  const auto* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t a = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n / 8; ++i)
    a = (a ^ w[i]) * 0x100000001b3ull;
  return a;
}

std::string statusName(int s) {
  if (s >= 0) return "node" + std::to_string(s);
  const char* n = strerrorname_np(-s);
  return n ? n : "E" + std::to_string(-s);
}

/// An anonymous mapping, unmapped on destruction.
struct Buffer {
  void* map = MAP_FAILED;
  uint64_t mapLen = 0;
  char* data = nullptr;
  uint64_t size = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (map != MAP_FAILED) munmap(map, mapLen);
  }
};

/// Allocates `size` bytes of `page` memory, bound to `node` (MPOL_BIND) when node >= 0, and first
/// touches every page with a pseudo-random pattern.
Result<std::unique_ptr<Buffer>> allocate(BenchPage page, uint64_t size, int node,
                                         const sys::SysRoot& root) {
  const uint64_t psz = pageBytes(page);
  if (size == 0 || size % psz != 0)
    return Error::input("size must be a positive multiple of the page size " + pageSizeName(psz),
                        "--size");
  auto b = std::make_unique<Buffer>();
  b->size = size;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (page == BenchPage::Thp) {
    const char* f = "/sys/kernel/mm/transparent_hugepage/enabled";
    auto mode = root.readAttr(f);
    if (!mode) return mode.error();
    auto active = sys::parseBracketChoice(mode.value(), root.path(f));
    if (!active) return active.error();
    if (active.value() == "never")
      return Error::env("THP is disabled: echo madvise > " + root.path(f), "--page thp");
    b->mapLen = size + psz;
  } else if (page == BenchPage::Hugetlb2M || page == BenchPage::Hugetlb1G) {
    flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
            (page == BenchPage::Hugetlb2M ? MAP_HUGE_2MB : MAP_HUGE_1GB);
    b->mapLen = size;
  } else {
    b->mapLen = size;
  }
  b->map = mmap(nullptr, b->mapLen, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (b->map == MAP_FAILED)
    return Error::fromErrno("mmap of " + formatBytes(b->mapLen) + " failed",
                            std::string("--page ") + benchPageName(page));
  uint64_t addr = reinterpret_cast<uint64_t>(b->map);
  if (page == BenchPage::Thp) addr = (addr + psz - 1) / psz * psz;
  b->data = reinterpret_cast<char*>(addr);
  if (page == BenchPage::Thp && madvise(b->data, size, MADV_HUGEPAGE) != 0)
    return Error::fromErrno("madvise(MADV_HUGEPAGE) failed", "--page thp");
  if (page == BenchPage::Base4k && madvise(b->data, size, MADV_NOHUGEPAGE) != 0)
    return Error::fromErrno("madvise(MADV_NOHUGEPAGE) failed", "--page 4k");
  if (node >= 0) {
    unsigned long mask[16] = {};
    if (node >= 1024) return Error::input("node id too large", "--from");
    mask[node / 64] |= 1ul << (node % 64);
    if (mbind(b->data, size, MPOL_BIND, mask, 1024, 0) != 0)
      return Error::fromErrno("mbind(MPOL_BIND) to node " + std::to_string(node) + " failed",
                              "--from");
  }
  auto* w = reinterpret_cast<uint64_t*>(b->data);
  for (uint64_t i = 0; i < size / 8; ++i)
    w[i] = splitmix(i);
  return b;
}

/// Reserves hugetlb pages on nodes for the bench and restores the previous nr_hugepages.
class HugepageReservation {
 public:
  explicit HugepageReservation(const sys::SysRoot& root) : root_(root) {}
  HugepageReservation(const HugepageReservation&) = delete;
  HugepageReservation& operator=(const HugepageReservation&) = delete;
  ~HugepageReservation() {
    for (auto it = restore_.rbegin(); it != restore_.rend(); ++it)
      (void)root_.write(it->first, it->second);
  }

  /// Makes sure `need` free pages of `pageSize` exist on `node`.
  Status ensureFree(int node, uint64_t pageSize, uint64_t need) {
    const std::string dir = poolDir(node, pageSize);
    auto free0 = readCount(dir, "free_hugepages");
    if (!free0) return free0.error();
    if (free0.value() >= need) return Ok{};
    auto nr = readCount(dir, "nr_hugepages");
    if (!nr) return nr.error();
    const std::string nrPath = dir + "nr_hugepages";
    const uint64_t want = nr.value() + (need - free0.value());
    Status w = root_.write(nrPath, std::to_string(want));
    if (w) restore_.emplace_back(nrPath, std::to_string(nr.value()));
    auto free1 = readCount(dir, "free_hugepages");
    if (!w || !free1 || free1.value() < need) {
      return Error::env("need " + std::to_string(need) + " free " + pageSizeName(pageSize) +
                            " hugetlb pages on node " + std::to_string(node) + ", have " +
                            std::to_string(free1 ? free1.value() : free0.value()) +
                            " after trying to reserve: reserve them first, e.g. echo " +
                            std::to_string(want) + " > " + root_.path(nrPath),
                        root_.path(nrPath));
    }
    note_ += (note_.empty() ? "" : "; ") + std::string("reserved ") +
             std::to_string(want - nr.value()) + " x " + pageSizeName(pageSize) + " on node " +
             std::to_string(node) + " (restored to " + std::to_string(nr.value()) + " after)";
    return Ok{};
  }
  /// Releases every free pool page of `pageSize` on `node` (nr_hugepages lowered by
  /// free_hugepages), so that none is left for a migration to take there. nr_hugepages is
  /// restored after even when nothing was free: a page migrated onto `node` as a temporary
  /// folio joins its pool (mm/hugetlb.c move_hugetlb_state() hands the pool place over from the
  /// source page), and the restore gives those places back.
  Status emptyFree(int node, uint64_t pageSize) {
    const std::string dir = poolDir(node, pageSize);
    auto free0 = readCount(dir, "free_hugepages");
    if (!free0) return free0.error();
    auto nr = readCount(dir, "nr_hugepages");
    if (!nr) return nr.error();
    const std::string nrPath = dir + "nr_hugepages";
    restore_.emplace_back(nrPath, std::to_string(nr.value()));
    if (free0.value() == 0) return Ok{};
    Status w = root_.write(nrPath, std::to_string(nr.value() - free0.value()));
    auto free1 = readCount(dir, "free_hugepages");
    if (!w || !free1 || free1.value() != 0)
      return Error::env("cannot release the free " + pageSizeName(pageSize) +
                            " hugetlb pages of node " + std::to_string(node),
                        root_.path(nrPath));
    note_ += (note_.empty() ? "" : "; ") + std::string("released ") +
             std::to_string(free0.value()) + " free x " + pageSizeName(pageSize) + " on node " +
             std::to_string(node) + " (restored to " + std::to_string(nr.value()) + " after)";
    return Ok{};
  }
  const std::string& note() const { return note_; }

 private:
  static std::string poolDir(int node, uint64_t pageSize) {
    return "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
           std::to_string(pageSize / kKiB) + "kB/";
  }
  Result<uint64_t> readCount(const std::string& dir, const char* file) const {
    auto t = root_.readAttr(dir + file);
    if (!t) return t.error();
    return sys::parseU64(t.value(), root_.path(dir + file));
  }

  sys::SysRoot root_;
  std::vector<std::pair<std::string, std::string>> restore_;
  std::string note_;
};

std::vector<void*> addresses(char* data, uint64_t size, uint64_t step) {
  std::vector<void*> out;
  out.reserve(size / step);
  for (uint64_t off = 0; off < size; off += step)
    out.push_back(data + off);
  return out;
}

}  // namespace

Result<BenchPage> parseBenchPage(const std::string& text) {
  for (BenchPage p :
       {BenchPage::Base4k, BenchPage::Thp, BenchPage::Hugetlb2M, BenchPage::Hugetlb1G})
    if (text == benchPageName(p)) return p;
  return Error::input("expected 4k, thp, hugetlb-2M or hugetlb-1G, got '" + text + "'", "--page");
}

std::string benchPageName(BenchPage p) {
  switch (p) {
    case BenchPage::Base4k:
      return pageKindName(PageKind::Base, 4 * kKiB);
    case BenchPage::Thp:
      return pageKindName(PageKind::Thp, 2 * kMiB);
    case BenchPage::Hugetlb2M:
      return pageKindName(PageKind::Hugetlb, 2 * kMiB);
    case BenchPage::Hugetlb1G:
      return pageKindName(PageKind::Hugetlb, kGiB);
  }
  return "?";
}

MeanStd meanStd(const std::vector<double>& v) {
  MeanStd r;
  if (v.empty()) return r;
  for (double x : v)
    r.mean += x;
  r.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v)
    ss += (x - r.mean) * (x - r.mean);
  r.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<double> pairedRatios(const MethodRuns& a, const MethodRuns& b) {
  std::vector<double> out;
  for (size_t i = 0; i < a.gibPerS.size() && i < b.gibPerS.size(); ++i)
    if (b.gibPerS[i] > 0) out.push_back(a.gibPerS[i] / b.gibPerS[i]);
  return out;
}

double LocateBenchReport::speedup() const {
  double t = meanStd(tierdSeconds).mean;
  return t > 0 ? meanStd(naiveSeconds).mean / t : 0;
}

namespace {

// What runMigrateBench needs before it allocates: runs >= 1, NUMA, the kernel CPU clock, and
// memory on both nodes.
Status checkMigrateBench(const MigrateBenchOptions& opts) {
  if (opts.runs < 1) return Error::input("runs must be >= 1", "--runs");
  if (opts.emptyTargetPool && opts.page != BenchPage::Hugetlb2M)
    return Error::input("only hugetlb-2M destinations can come from outside the pool",
                        "--target-pool empty");
  if (opts.emptyTargetPool && opts.from == opts.to)
    return Error::input("needs --to other than --from", "--target-pool empty");
  if (numa_available() < 0) return Error::env("libnuma: NUMA is not available", "numa_available");
  if (auto cpu = threadSystemCpuNs(); !cpu) return cpu.error().within("kernel CPU time");
  for (int n : {opts.from, opts.to})
    if (n < 0 || n > numa_max_node() || numa_node_size64(n, nullptr) <= 0)
      return Error::input("node " + std::to_string(n) + " has no memory or does not exist",
                          "--from/--to");
  return Ok{};
}

// Appends one run's wall seconds, GiB/s of `bytes` and kernel CPU seconds to `m`.
void recordRun(MethodRuns& m, uint64_t bytes, double sec, double cpuSec) {
  m.seconds.push_back(sec);
  m.gibPerS.push_back(sec > 0 ? static_cast<double>(bytes) / static_cast<double>(kGiB) / sec : 0);
  m.cpuSeconds.push_back(cpuSec);
}

// One run of the "tierd" method: MovePagesMigrator::execute on range `r` as the daemon runs it
// (Engine: one smaps read per process and tick, handed to the migrator through `reads`, the
// ProcReads it was built with); the smaps read is timed apart (MethodRuns::smapsSeconds), the time
// inside move calls too (moveCallSeconds).
Status timeTierd(MovePagesMigrator& tierd, ProcReads& reads, const sys::SysRoot& root,
                 const MoveRange& r, MethodRuns& m) {
  const double s0 = nowSeconds();
  auto smaps = sys::readSmaps(root, r.pid);
  if (!smaps) return smaps.error().within("smaps of the bench process");
  m.smapsSeconds.push_back(nowSeconds() - s0);
  reads.setSmaps(r.pid,
                 std::make_shared<const std::vector<sys::SmapsVma>>(std::move(smaps.value())));
  const double c0 = threadKernelSeconds();
  const double t0 = nowSeconds();
  BatchResult res = tierd.execute({r}, tierd.nowNs() + 3'600'000'000'000LL);
  const double sec = nowSeconds() - t0;
  const double c1 = threadKernelSeconds();
  reads.clear();
  recordRun(m, r.length, sec, c1 - c0);
  m.statuses.clear();
  const RangeResult& rr = res.ranges.at(0);
  for (size_t o = 0; o < kMoveOutcomeCount; ++o)
    if (rr.outcomes.pages[o])
      m.statuses[moveOutcomeName(static_cast<MoveOutcome>(o))] = rr.outcomes.pages[o];
  m.addresses = rr.outcomes.total();
  m.calls = res.stats.queryCalls + res.stats.moveCalls;
  m.bytesMoved = res.stats.bytesMoved;
  int64_t callNs = 0;
  for (const MoveCallRecord& c : res.stats.moveCallRecords)
    callNs += c.wallNs;
  m.moveCallSeconds.push_back(static_cast<double>(callNs) / 1e9);
  return Ok{};
}

}  // namespace

Result<MigrateBenchReport> runMigrateBench(const MigrateBenchOptions& opts,
                                           const sys::SysRoot& root) {
  if (Status s = checkMigrateBench(opts); !s) return s.error();
  MigrateBenchReport rep;
  rep.options = opts;
  rep.pageSize = pageBytes(opts.page);
  const uint64_t psz = rep.pageSize;

  HugepageReservation reservation(root);
  if (opts.page == BenchPage::Hugetlb2M || opts.page == BenchPage::Hugetlb1G) {
    if (opts.sizeBytes % psz != 0)
      return Error::input("size must be a multiple of " + pageSizeName(psz), "--size");
    Status s = reservation.ensureFree(opts.from, psz, opts.sizeBytes / psz);
    if (!s) return s.error();
    if (opts.to != opts.from) {
      s = opts.emptyTargetPool ? reservation.emptyFree(opts.to, psz)
                               : reservation.ensureFree(opts.to, psz, opts.sizeBytes / psz);
      if (!s) return s.error();
    }
  }
  auto buf = allocate(opts.page, opts.sizeBytes, opts.from, root);
  if (!buf) return buf.error();
  char* data = buf.value()->data;
  const uint64_t size = opts.sizeBytes;
  const uint64_t before = checksum(data, size);

  std::vector<void*> perPage = addresses(data, size, psz);
  std::vector<void*> per4k = addresses(data, size, 4 * kKiB);
  std::vector<int> status(per4k.size());
  {
    long r = numa_move_pages(0, perPage.size(), perPage.data(), nullptr, status.data(), 0);
    if (r < 0) return Error::fromErrno("move_pages(nodes=NULL) failed", "self");
    uint64_t onSource = 0;
    for (size_t i = 0; i < perPage.size(); ++i)
      onSource += status[i] == opts.from;
    rep.sourceFraction = static_cast<double>(onSource) / static_cast<double>(perPage.size());
  }
  std::vector<int> toFrom(per4k.size(), opts.from);
  std::vector<int> toTarget(per4k.size(), opts.to);
  auto moveBack = [&]() {
    if (opts.from == opts.to) return;
    (void)numa_move_pages(0, perPage.size(), perPage.data(), toFrom.data(), status.data(),
                          MPOL_MF_MOVE);
  };
  auto rawCall = [&](MethodRuns& m, std::vector<void*>& addrs) {
    m.statuses.clear();
    double c0 = threadKernelSeconds();
    double t0 = nowSeconds();
    long r = numa_move_pages(0, addrs.size(), addrs.data(), toTarget.data(), status.data(),
                             MPOL_MF_MOVE);
    double t1 = nowSeconds();
    double c1 = threadKernelSeconds();
    int err = errno;
    recordRun(m, size, t1 - t0, c1 - c0);
    m.addresses = addrs.size();
    m.calls = 1;
    if (r < 0) {
      m.statuses["call_failed_" + statusName(-err)] += 1;
      return;
    }
    if (r > 0) m.statuses["not_migrated_return"] += static_cast<uint64_t>(r);
    for (size_t i = 0; i < addrs.size(); ++i)
      m.statuses[statusName(status[i])] += 1;
  };

  const std::vector<std::string> names = {"tierd", "raw_single_call", "per_4k"};
  for (const auto& n : names)
    rep.methods[n];
  MigratorConfig cfg;
  cfg.callLatencyTargetNs = static_cast<int64_t>(opts.callLatencyTargetNs);
  auto reads = std::make_shared<ProcReads>();
  MovePagesMigrator tierd(cfg, makeLinuxPageSystem(root), reads);
  // Run -1 is a warm-up, untimed (its figures are dropped, its checksum counts): tierd's migrator
  // and the raw call move the buffer once each, so that no timed method pays first-time costs. In
  // the rig these were 0.2-0.5x the steady rate for whichever method ran first in run 1: the
  // host backs guest memory on its first write, and TCG translates code the first time it runs.
  for (int run = opts.from != opts.to ? -1 : 0; run < opts.runs; ++run) {
    bool ok = true;
    const bool warmUp = run < 0;
    for (size_t k = 0; k < names.size(); ++k) {
      // Rotate the order each run so no method always runs first (cache and TLB state).
      const std::string& name = names[(k + static_cast<size_t>(std::max(run, 0))) % names.size()];
      if (warmUp && name == "per_4k") continue;
      moveBack();
      MethodRuns scratch;
      MethodRuns& m = warmUp ? scratch : rep.methods[name];
      if (name == "tierd") {
        MoveRange r;
        r.pid = getpid();
        r.start = reinterpret_cast<uint64_t>(data);
        r.length = size;
        r.pageSize = psz;
        r.target = opts.to;
        if (Status t = timeTierd(tierd, *reads, root, r, m); !t) return t.error();
      } else if (name == "raw_single_call") {
        rawCall(m, perPage);
      } else {
        rawCall(m, per4k);
      }
      if (checksum(data, size) != before) ok = false;
    }
    if (!warmUp) rep.intact.push_back(ok);
    rep.dataIntact = rep.dataIntact && ok;
  }
  rep.hugepageNote = reservation.note();
  return rep;
}

Result<LocateBenchReport> runLocateBench(const LocateBenchOptions& opts, const sys::SysRoot& root) {
  if (opts.runs < 1) return Error::input("runs must be >= 1", "--runs");
  if (opts.page != BenchPage::Base4k && opts.page != BenchPage::Thp)
    return Error::input("bench locate supports --page 4k or thp", "--page");
  LocateBenchReport rep;
  rep.options = opts;
  auto buf = allocate(opts.page, opts.sizeBytes, -1, root);
  if (!buf) return buf.error();
  char* data = buf.value()->data;
  const uint64_t size = opts.sizeBytes;
  const pid_t self = getpid();
  if (auto sm = sys::readSmaps(root, self)) {
    for (const auto& v : sm.value())
      if (v.start <= reinterpret_cast<uint64_t>(data) && reinterpret_cast<uint64_t>(data) < v.end)
        rep.thpCoverage = static_cast<double>(v.anonHugePages) / static_cast<double>(size);
  }
  std::vector<void*> per4k = addresses(data, size, 4 * kKiB);
  std::vector<int> status(per4k.size());
  rep.naiveAddresses = per4k.size();
  MovePagesMigrator tierd(MigratorConfig{}, makeLinuxPageSystem(root));
  const std::vector<AddressRange> ranges = {{reinterpret_cast<uint64_t>(data), size}};
  for (int run = 0; run < opts.runs; ++run) {
    // Alternate which method goes first, so neither always finds the page tables warm.
    double naive = 0;
    double mine = 0;
    Result<LocateResult> loc = Error::input("not run", "bench");
    for (int k = 0; k < 2; ++k) {
      if ((k + run) % 2 == 0) {
        double t0 = nowSeconds();
        long r = numa_move_pages(self, per4k.size(), per4k.data(), nullptr, status.data(), 0);
        naive = nowSeconds() - t0;
        if (r < 0) return Error::fromErrno("move_pages(nodes=NULL) failed", "self");
      } else {
        double t0 = nowSeconds();
        loc = tierd.locate(self, ranges);
        mine = nowSeconds() - t0;
        if (!loc) return loc.error();
      }
    }
    rep.naiveSeconds.push_back(naive);
    rep.tierdSeconds.push_back(mine);
    rep.identical = rep.identical && loc->perBasePage(4 * kKiB) == status;
    rep.tierdQueriedPages = loc->queriedPages;
    rep.tierdQueryCalls = loc->queryCalls;
    rep.tierdSkippedBytes = loc->skippedBytes;
    rep.tierdPagemapPages = loc->pagemapPages;
  }
  return rep;
}

}  // namespace tierd::migrate

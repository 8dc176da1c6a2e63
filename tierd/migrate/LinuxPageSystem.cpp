// The live kernel behind the PageSystem seam: libnuma's numa_move_pages (move_pages(2)), /proc
// read under a SysRoot, CLOCK_MONOTONIC and the thread's kernel CPU time.
#include <fcntl.h>
#include <numa.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tierd/core/Clock.h"
#include "tierd/migrate/Migrator.h"
#include "tierd/sys/Parsers.h"

namespace tierd::migrate {
namespace {

class LinuxPageSystem final : public PageSystem {
 public:
  explicit LinuxPageSystem(sys::SysRoot root) : root_(std::move(root)) {}

  long movePages(pid_t pid, uint64_t count, void** pages, const int* nodes, int* status,
                 int flags) override {
    // numa_move_pages takes a non-const nodes array but does not write it.
    long r = numa_move_pages(pid, count, pages, const_cast<int*>(nodes), status, flags);
    if (r < 0) return -errno;
    return r;
  }
  Result<std::vector<sys::SmapsVma>> maps(pid_t pid) override { return sys::readMaps(root_, pid); }
  Result<std::vector<sys::SmapsVma>> smaps(pid_t pid) override {
    return sys::readSmaps(root_, pid);
  }
  Result<std::vector<sys::NumaMapsVma>> numaMaps(pid_t pid) override {
    return sys::readNumaMaps(root_, pid);
  }
  Result<std::set<NodeId>> memsAllowed(pid_t pid) override {
    return sys::readMemsAllowed(root_, pid);
  }
  // Only when this process is shown page frames: pagemap hides them from a reader without
  // CAP_SYS_ADMIN (which the daemon drops at start, sys::daemonCapabilities), and then a block
  // map would only add a pagemap read to every query.
  Result<sys::MemoryBlockNodes> memoryBlockNodes() override {
    volatile uint64_t probe = 1;  // on this thread's stack: a present, written page
    const uint64_t addr = reinterpret_cast<uint64_t>(&probe);
    auto pm = pagemapOf("/proc/self/pagemap", addr / basePageSize() * basePageSize(), 1);
    if (!pm) return pm.error();
    if (!(pm.value()[0] & kPagemapPresent) || (pm.value()[0] & kPagemapPfnMask) == 0)
      return Error::env("pagemap shows no page frames to this process (no CAP_SYS_ADMIN)",
                        "/proc/self/pagemap");
    return sys::readMemoryBlockNodes(root_);
  }
  Result<std::vector<uint64_t>> pagemap(pid_t pid, uint64_t start, uint64_t pages) override {
    return pagemapOf(root_.path("/proc/" + std::to_string(pid) + "/pagemap"), start, pages);
  }
  uint64_t basePageSize() override { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }
  uint64_t thpSize() override {
    if (thpSize_ == 0) {
      const char* f = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size";
      auto text = root_.readAttr(f);
      auto v = text ? sys::parseU64(text.value(), root_.path(f)) : Result<uint64_t>(text.error());
      // Without THP support no VMA has AnonHugePages, so the value is never used; 2 MiB is the
      // x86-64 PMD size.
      thpSize_ = v ? v.value() : (2ull << 20);
    }
    return thpSize_;
  }
  int64_t nowNs() override { return static_cast<int64_t>(monotonicNs()); }
  bool sleepUntilNs(int64_t ns, const std::atomic<bool>* stop) override {
    // In slices of at most kStopPollNs when there is a stop flag to watch.
    for (;;) {
      if (stop && stop->load(std::memory_order_relaxed)) return nowNs() >= ns;
      const int64_t now = nowNs();
      if (now >= ns) return true;
      const int64_t until = stop ? std::min(ns, now + kStopPollNs) : ns;
      timespec ts{};
      ts.tv_sec = until / 1'000'000'000;
      ts.tv_nsec = until % 1'000'000'000;
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      }
    }
  }
  int64_t threadKernelCpuNs() override {
    // getrusage(RUSAGE_THREAD) fails only on kernels without RUSAGE_THREAD (before 2.6.26, far
    // below what tierd runs on): there every reading is 0 and each call's delta is 0, not noise.
    return static_cast<int64_t>(threadSystemCpuNs().valueOr(0));
  }

 private:
  // pread of `pages` entries of the pagemap file `path` from address `start`.
  Result<std::vector<uint64_t>> pagemapOf(const std::string& path, uint64_t start, uint64_t pages) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error::fromErrno("cannot open", path);
    std::vector<uint64_t> out(pages);
    const size_t want = pages * sizeof(uint64_t);
    size_t got = 0;
    const off_t off = static_cast<off_t>(start / basePageSize() * sizeof(uint64_t));
    while (got < want) {
      ssize_t n = ::pread(fd, reinterpret_cast<char*>(out.data()) + got, want - got,
                          off + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Error e =
            n < 0 ? Error::fromErrno("cannot read", path) : Error::sys(EIO, "short read", path);
        ::close(fd);
        return e;
      }
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    return out;
  }
  sys::SysRoot root_;
  uint64_t thpSize_ = 0;
};

}  // namespace

std::unique_ptr<PageSystem> makeLinuxPageSystem(sys::SysRoot root) {
  (void)libnumaHookCalls();  // links NumaHooks.cpp (the numa_error/numa_warn overrides)
  return std::make_unique<LinuxPageSystem>(std::move(root));
}

}  // namespace tierd::migrate

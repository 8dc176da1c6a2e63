// tierd-holdmem: holds a "keep" table of base pages and, after it, an "extra" table, so a test can
// unmap part of a process's memory while `tierctl move` is working on it.
//
// Layout (one mapping, MADV_NOHUGEPAGE so every page is a base page):
//   [keep: --size] [guard: one base page, PROT_NONE] [extra: --extra]
// The guard splits the mapping into separate VMAs. Both tables are bound to --node (MPOL_BIND)
// before first touch and filled with a pseudo-random pattern. With --unmap-extra-when-on NODE the
// program polls where the first page of keep is (move_pages(2) with nodes=NULL, every
// millisecond); as soon as it is on NODE (a move to NODE has started, in address order) it
// unmaps extra and prints "unmapped extra". It then waits for SIGTERM/SIGINT (or --seconds),
// compares keep with its first-touch checksum and exits 0 (intact) or 3 (changed). With
// --refault-extra-ms N it drops extra's pages (MADV_DONTNEED) and writes them again every N ms,
// so the process keeps taking page faults for as long as it runs (software page-fault sampling
// sees it after it started). The first line
// on stdout, once the tables are ready, is:
//   tierd-holdmem pid P keep 0xA-0xB extra 0xC-0xD
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tests/workloads/SizeArg.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

namespace {

volatile sig_atomic_t gStopRequested = 0;

extern "C" void requestStop(int) {
  gStopRequested = 1;
}

struct Options {
  uint64_t sizeBytes = 256 * tierd::kMiB;
  uint64_t extraBytes = 32 * tierd::kMiB;
  int node = -1;
  int unmapWhenOn = -1;
  uint64_t seconds = 120;
  uint64_t refaultMs = 0;  // 0: never
};

void usage(std::ostream& out) {
  out << "usage: tierd-holdmem [--size BYTES[KMG]] [--extra BYTES[KMG]] [--node N]\n"
         "                     [--unmap-extra-when-on NODE] [--seconds N]\n"
         "                     [--refault-extra-ms N]\n"
         "Holds keep (--size) and extra (--extra) tables of base pages separated by a guard\n"
         "page; unmaps extra as soon as keep's first page is on NODE; on SIGTERM (or after\n"
         "--seconds) verifies keep: exit 0 intact, 3 changed. --refault-extra-ms N drops and\n"
         "rewrites extra every N ms (page faults for as long as it runs).\n";
}

bool parseSize(const std::string& s, uint64_t& out) {
  auto n = tierd::workloads::parseSizeArg(s, "size", uint64_t{1} << 40);
  if (n) out = *n;
  return n.ok();
}

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t checksum(const uint64_t* w, uint64_t words) {
  uint64_t a = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < words; ++i)
    a = (a ^ w[i]) * 0x100000001b3ull;
  return a;
}

uint64_t monotonicMs() {
  return tierd::monotonicNs() / 1'000'000u;
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      usage(std::cout);
      return 0;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "tierd-holdmem: " << a << " needs a value (or is unknown)\n";
      return 2;
    }
    const std::string v = args[++i];
    bool ok = true;
    if (a == "--size" || a == "--extra") {
      uint64_t& dst = a == "--size" ? o.sizeBytes : o.extraBytes;
      ok = parseSize(v, dst) && dst > 0;
    } else if (a == "--node" || a == "--unmap-extra-when-on") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() < 1024;
      if (ok) (a == "--node" ? o.node : o.unmapWhenOn) = static_cast<int>(n.value());
    } else if (a == "--refault-extra-ms") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() >= 1 && n.value() <= 60000;
      if (ok) o.refaultMs = n.value();
    } else if (a == "--seconds") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() >= 1;
      if (ok) o.seconds = n.value();
    } else {
      std::cerr << "tierd-holdmem: unknown option " << a << "\n";
      usage(std::cerr);
      return 2;
    }
    if (!ok) {
      std::cerr << "tierd-holdmem: bad value '" << v << "' for " << a << "\n";
      return 2;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = requestStop;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);

  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t keepLen = (o.sizeBytes + page - 1) / page * page;
  const uint64_t extraLen = (o.extraBytes + page - 1) / page * page;
  const uint64_t total = keepLen + page + extraLen;
  void* raw = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::cerr << "tierd-holdmem: mmap of " << tierd::formatBytes(total)
              << " failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  char* keep = static_cast<char*>(raw);
  char* guard = keep + keepLen;
  char* extra = guard + page;
  if (::madvise(raw, total, MADV_NOHUGEPAGE) != 0 || ::mprotect(guard, page, PROT_NONE) != 0) {
    std::cerr << "tierd-holdmem: madvise/mprotect failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (o.node >= 0) {
    if (numa_available() < 0 || o.node > numa_max_node()) {
      std::cerr << "tierd-holdmem: node " << o.node << " does not exist\n";
      return 1;
    }
    numa_tonode_memory(keep, keepLen, o.node);  // mbind(MPOL_BIND) before first touch
    numa_tonode_memory(extra, extraLen, o.node);
  }
  auto* kw = reinterpret_cast<uint64_t*>(keep);
  auto* ew = reinterpret_cast<uint64_t*>(extra);
  for (uint64_t i = 0; i < keepLen / 8; ++i)
    kw[i] = splitmix(i);
  for (uint64_t i = 0; i < extraLen / 8; ++i)
    ew[i] = splitmix(i + (1ull << 40));
  const uint64_t before = checksum(kw, keepLen / 8);
  std::printf(
      "tierd-holdmem pid %d keep 0x%lx-0x%lx extra 0x%lx-0x%lx\n", static_cast<int>(::getpid()),
      reinterpret_cast<unsigned long>(keep), reinterpret_cast<unsigned long>(keep + keepLen),
      reinterpret_cast<unsigned long>(extra), reinterpret_cast<unsigned long>(extra + extraLen));
  std::fflush(stdout);

  const uint64_t t0 = monotonicMs();
  const uint64_t limitMs = o.seconds * 1000u;
  bool unmapped = false;
  while (!gStopRequested && monotonicMs() - t0 < limitMs) {
    if (o.unmapWhenOn >= 0 && !unmapped) {
      void* p = keep;
      int status = -1;
      if (::move_pages(0, 1, &p, nullptr, &status, 0) == 0 && status == o.unmapWhenOn) {
        if (::munmap(extra, extraLen) != 0) {
          std::printf("tierd-holdmem: munmap of extra failed: %s\n", std::strerror(errno));
          return 1;
        }
        unmapped = true;
        std::printf("unmapped extra 0x%lx-0x%lx: keep's first page on node %d after %llu ms\n",
                    reinterpret_cast<unsigned long>(extra),
                    reinterpret_cast<unsigned long>(extra + extraLen), o.unmapWhenOn,
                    static_cast<unsigned long long>(monotonicMs() - t0));
        std::fflush(stdout);
      }
      sleepMs(1);
    } else if (o.refaultMs > 0 && !unmapped) {
      // Every page of extra faults again on its next write (a fresh zeroed page).
      if (::madvise(extra, extraLen, MADV_DONTNEED) != 0) {
        std::printf("tierd-holdmem: madvise(MADV_DONTNEED) of extra failed: %s\n",
                    std::strerror(errno));
        return 1;
      }
      for (uint64_t off = 0; off < extraLen; off += page)
        ew[off / 8] = splitmix(off);
      sleepMs(static_cast<long>(o.refaultMs));
    } else {
      sleepMs(20);
    }
  }
  if (o.unmapWhenOn >= 0 && !unmapped)
    std::printf("never saw keep's first page on node %d: extra stays mapped\n", o.unmapWhenOn);
  const bool intact = checksum(kw, keepLen / 8) == before;
  std::printf("keep %s: checksum %s\n", tierd::formatBytes(keepLen).c_str(),
              intact ? "ok" : "MISMATCH: data changed");
  return intact ? 0 : 3;
}

// tierd-gups: GUPS-style random read-modify-write updates over a table with a known hot set.
//
// The table is split into chunks (`--hot-chunk`, default 2 MiB: one THP); a deterministic (seeded)
// scattered subset of chunks, `--hot-fraction` of the table, receives `--hot-share` of the
// updates, the other chunks the rest. With 1 GiB hugetlb pages, `--hot-chunk 1G` makes the hot
// set whole pages (with 2 MiB chunks every 1 GiB page would hold hot chunks).
// Each update XORs a random 64-bit value into a random word of the chosen chunk with an atomic
// XOR, and each thread XORs the same values into a private accumulator. At the end
// XOR(table) must equal XOR(initial table) ^ XOR(all values): a migration that lost or corrupted
// data is caught (exit status 3). The hot set (ground truth for `tierctl hotness`) is written as
// "pid N" and one "start-end" hex range per line. Updates per second are printed every second.

#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "tests/workloads/SizeArg.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

namespace {

constexpr uint64_t kChunk = 2 * tierd::kMiB;

struct Options {
  uint64_t sizeBytes = tierd::kGiB;
  double hotFraction = 0.1;
  double hotShare = 0.9;
  uint64_t seed = 1;
  std::string backing = "anon";  // anon | thp | hugetlb-2M | hugetlb-1G
  int node = -1;
  unsigned threads = 1;
  uint64_t seconds = 10;
  std::string hotSetOut;
  bool mlock = false;
  uint64_t hotChunk = 2 * tierd::kMiB;  // granularity of the hot set, a multiple of 2 MiB
  bool unbind = false;                  // drop the --node binding once the table is populated
};

void usage(std::ostream& out) {
  out << "usage: tierd-gups [--size BYTES[KMG]] [--hot-fraction F] [--hot-share S] [--seed N]\n"
         "                  [--backing anon|thp|hugetlb-2M|hugetlb-1G] [--node N] [--threads N]\n"
         "                  [--seconds N] [--hot-set-out FILE] [--mlock] [--hot-chunk BYTES[KMG]]\n"
         "                  [--unbind]\n"
         "Random read-modify-write updates; --hot-fraction of the table (scattered chunks of\n"
         "--hot-chunk bytes, default 2M, a multiple of 2M) gets --hot-share of the updates.\n"
         "Prints updates/s every second; verifies the table.\n"
         "--mlock locks the table in RAM after first touch (it must still migrate).\n"
         "--unbind resets the table's memory policy to the default after first touch: the pages\n"
         "stay on --node, but the kernel's NUMA balancing may move them (it never moves pages of\n"
         "a VMA bound to other nodes).\n"
         "SIGUSR1 shifts the hot set to other chunks (as many, disjoint where the table allows),\n"
         "rewrites --hot-set-out and prints 't=Ns hot set shifted'; another SIGUSR1 shifts it "
         "back.\n";
}

bool parseSize(const std::string& s, uint64_t& out) {
  auto n = tierd::workloads::parseSizeArg(s, "size");
  if (n) out = *n;
  return n.ok();
}

bool parseFraction(const std::string& s, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return errno == 0 && end != s.c_str() && *end == '\0' && out >= 0 && out <= 1;
}

// xorshift64* (Vigna): fast, deterministic per seed.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

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
    if (a == "--mlock") {  // mlock(2) pins pages in RAM, not to a node: they must still migrate
      o.mlock = true;
      continue;
    }
    if (a == "--unbind") {
      o.unbind = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "tierd-gups: " << a << " needs a value (or is unknown)\n";
      return 2;
    }
    const std::string v = args[++i];
    bool ok = true;
    if (a == "--size") {
      ok = parseSize(v, o.sizeBytes) && o.sizeBytes >= kChunk;
    } else if (a == "--hot-fraction") {
      ok = parseFraction(v, o.hotFraction);
    } else if (a == "--hot-share") {
      ok = parseFraction(v, o.hotShare);
    } else if (a == "--seed") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok();
      if (ok) o.seed = n.value();
    } else if (a == "--backing") {
      o.backing = v;
      ok = v == "anon" || v == "thp" || v == "hugetlb-2M" || v == "hugetlb-1G";
    } else if (a == "--node") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() < 1024;
      if (ok) o.node = static_cast<int>(n.value());
    } else if (a == "--threads") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() >= 1 && n.value() <= 1024;
      if (ok) o.threads = static_cast<unsigned>(n.value());
    } else if (a == "--seconds") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() >= 1;
      if (ok) o.seconds = n.value();
    } else if (a == "--hot-chunk") {
      ok = parseSize(v, o.hotChunk) && o.hotChunk >= kChunk && o.hotChunk % kChunk == 0;
    } else if (a == "--hot-set-out") {
      o.hotSetOut = v;
    } else {
      std::cerr << "tierd-gups: unknown option " << a << "\n";
      usage(std::cerr);
      return 2;
    }
    if (!ok) {
      std::cerr << "tierd-gups: bad value '" << v << "' for " << a << "\n";
      return 2;
    }
  }
  const uint64_t page = o.backing == "hugetlb-1G" ? tierd::kGiB : kChunk;
  // The table is whole pages and whole hot-set chunks.
  const uint64_t unit = std::lcm(page, o.hotChunk);
  const uint64_t size = (o.sizeBytes + unit - 1) / unit * unit;
  const uint64_t chunkBytes = o.hotChunk;
  const uint64_t chunks = size / chunkBytes;

  // Map, aligned to 2 MiB so every chunk can be one THP.
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  uint64_t mapLen = size + kChunk;
  if (o.backing == "hugetlb-2M") {
    flags |= MAP_HUGETLB | (21 << MAP_HUGE_SHIFT);
    mapLen = size;
  } else if (o.backing == "hugetlb-1G") {
    flags |= MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
    mapLen = size;
  }
  void* raw = ::mmap(nullptr, mapLen, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (raw == MAP_FAILED) {
    std::cerr << "tierd-gups: mmap of " << tierd::formatBytes(mapLen) << " (" << o.backing
              << ") failed: " << std::strerror(errno)
              << (o.backing.rfind("hugetlb", 0) == 0 ? " (reserve pages in nr_hugepages first)"
                                                     : "")
              << "\n";
    return 1;
  }
  auto base = reinterpret_cast<uint64_t>(raw);
  if (o.backing == "anon" || o.backing == "thp") base = (base + kChunk - 1) & ~(kChunk - 1);
  auto* table = reinterpret_cast<uint64_t*>(base);
  if (o.backing == "thp" && ::madvise(table, size, MADV_HUGEPAGE) != 0) {
    std::cerr << "tierd-gups: madvise(MADV_HUGEPAGE) failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (o.node >= 0) {
    if (numa_available() < 0 || o.node > numa_max_node()) {
      std::cerr << "tierd-gups: node " << o.node << " does not exist\n";
      return 1;
    }
    numa_tonode_memory(table, size, o.node);  // mbind(MPOL_BIND) before first touch
  }

  // Initialize (first touch) and the initial checksum.
  const uint64_t words = size / sizeof(uint64_t);
  uint64_t expected = 0;
  for (uint64_t i = 0; i < words; ++i) {
    table[i] = i * 0x9E3779B97F4A7C15ull;
    expected ^= table[i];
  }

  if (o.unbind && o.node >= 0 && ::mbind(table, size, MPOL_DEFAULT, nullptr, 0, 0) != 0) {
    std::cerr << "tierd-gups: mbind(MPOL_DEFAULT) failed: " << std::strerror(errno) << "\n";
    return 1;
  }

  if (o.mlock && ::mlock(table, size) != 0) {
    std::cerr << "tierd-gups: mlock of " << tierd::formatBytes(size)
              << " failed: " << std::strerror(errno) << " (RLIMIT_MEMLOCK?)\n";
    return 1;
  }

  // The hot set: a seeded shuffle of chunk indices; the first `hot` are hot.
  std::vector<uint64_t> order(chunks);
  for (uint64_t i = 0; i < chunks; ++i)
    order[i] = i;
  Rng pick(o.seed);
  for (uint64_t i = chunks - 1; i > 0; --i)
    std::swap(order[i], order[pick.below(i + 1)]);
  uint64_t hot = static_cast<uint64_t>(o.hotFraction * static_cast<double>(chunks) + 0.5);
  hot = std::min(std::max<uint64_t>(hot, o.hotFraction > 0 ? 1 : 0), chunks);
  // Two hot sets: phase 0 uses the first `hot` chunks of the shuffle, phase 1 (after SIGUSR1)
  // the next `hot` (wrapping around where the table has fewer than 2 * hot chunks).
  std::vector<uint64_t> hotSets[2], coldSets[2];
  for (int ph = 0; ph < 2; ++ph) {
    std::vector<bool> isHot(chunks, false);
    for (uint64_t k = 0; k < hot; ++k)
      isHot[order[(ph * hot + k) % chunks]] = true;
    for (uint64_t c = 0; c < chunks; ++c)
      (isHot[c] ? hotSets[ph] : coldSets[ph]).push_back(c);
  }
  // The hot set as "pid N" and merged hex ranges, written aside and renamed (tierd-hotset and
  // the rig read it while gups runs).
  const auto writeHotSet = [&](const std::vector<uint64_t>& hotChunks) {
    if (o.hotSetOut.empty()) return true;
    const std::string tmp = o.hotSetOut + ".tmp";
    {
      std::ofstream f(tmp);
      f << "pid " << ::getpid() << "\n";
      char line[64];
      for (size_t i = 0; i < hotChunks.size();) {  // merge adjacent chunks into one range
        size_t j = i + 1;
        while (j < hotChunks.size() && hotChunks[j] == hotChunks[j - 1] + 1)
          ++j;
        std::snprintf(
            line, sizeof line, "%lx-%lx\n",
            static_cast<unsigned long>(base + hotChunks[i] * chunkBytes),
            static_cast<unsigned long>(base + hotChunks[j - 1] * chunkBytes + chunkBytes));
        f << line;
        i = j;
      }
      if (!f.flush()) return false;
    }
    return ::rename(tmp.c_str(), o.hotSetOut.c_str()) == 0;
  };
  if (!writeHotSet(hotSets[0])) {
    std::cerr << "tierd-gups: cannot write " << o.hotSetOut << "\n";
    return 1;
  }
  std::cout << "tierd-gups pid " << ::getpid() << " table " << tierd::formatBytes(size) << " at 0x"
            << std::hex << base << std::dec << " (" << o.backing << "), " << hot << " hot of "
            << chunks << " " << tierd::formatBytes(chunkBytes) << " chunks get " << o.hotShare * 100
            << "% of updates, " << o.threads << " threads, " << o.seconds << " s"
            << (o.mlock ? ", mlocked" : "") << (o.unbind ? ", unbound" : "") << std::endl;

  std::atomic<bool> stop{false};
  std::atomic<int> phase{0};  // which hot set the workers use (SIGUSR1 flips it)
  std::vector<std::atomic<uint64_t>> counts(o.threads);
  std::vector<uint64_t> xors(o.threads, 0);
  const uint64_t shareScaled = static_cast<uint64_t>(o.hotShare * 1e9);
  const uint64_t wordsPerChunk = chunkBytes / sizeof(uint64_t);
  // SIGTERM/SIGINT end the run early; the table is still verified (the rig stops gups this way).
  // Blocked before the workers start, so every thread inherits the mask and only the main
  // thread takes the signal, with sigtimedwait below.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < o.threads; ++t) {
    workers.emplace_back([&, t] {
      Rng r(o.seed * 1000003 + t + 1);
      uint64_t x = 0, n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const int ph = phase.load(std::memory_order_relaxed);
        const auto& hotChunks = hotSets[ph];
        const auto& coldChunks = coldSets[ph];
        for (int k = 0; k < 4096; ++k) {
          const bool toHot =
              coldChunks.empty() || (!hotChunks.empty() && r.below(1000000000) < shareScaled);
          const auto& set = toHot ? hotChunks : coldChunks;
          const uint64_t chunk = set[r.below(set.size())];
          const uint64_t idx = chunk * wordsPerChunk + r.below(wordsPerChunk);
          const uint64_t v = r.next();
          __atomic_fetch_xor(&table[idx], v, __ATOMIC_RELAXED);
          x ^= v;
        }
        n += 4096;
        counts[t].store(n, std::memory_order_relaxed);
      }
      xors[t] = x;
    });
  }
  const uint64_t start = tierd::monotonicNs();
  uint64_t last = 0;
  for (uint64_t s = 1; s <= o.seconds; ++s) {
    siginfo_t info;
    const timespec zero{0, 0};
    int sig = sigtimedwait(&term, &info, &zero);
    while (sig == SIGUSR1) {
      const int next = 1 - phase.load();
      if (!writeHotSet(hotSets[next])) {
        std::cerr << "tierd-gups: cannot write " << o.hotSetOut << "\n";
        sig = SIGTERM;
        break;
      }
      phase.store(next);
      std::cout << "t=" << (s - 1) << "s hot set shifted" << std::endl;
      sig = sigtimedwait(&term, &info, &zero);
    }
    if (sig > 0) {
      std::cout << "stopped by signal " << sig << " after " << (s - 1) << " s" << std::endl;
      break;
    }
    const uint64_t target = start + s * 1000000000u;
    for (uint64_t now = tierd::monotonicNs(); now < target; now = tierd::monotonicNs()) {
      timespec ts{0, static_cast<long>(std::min<uint64_t>(target - now, 100000000u))};
      ::nanosleep(&ts, nullptr);
    }
    uint64_t total = 0;
    for (auto& c : counts)
      total += c.load(std::memory_order_relaxed);
    std::cout << "t=" << s << "s updates/s=" << (total - last) << std::endl;
    last = total;
  }
  stop = true;
  for (auto& w : workers)
    w.join();
  uint64_t total = 0;
  for (unsigned t = 0; t < o.threads; ++t) {
    expected ^= xors[t];
    total += counts[t].load();
  }
  uint64_t actual = 0;
  for (uint64_t i = 0; i < words; ++i)
    actual ^= table[i];
  const double secs = static_cast<double>(tierd::monotonicNs() - start) / 1e9;
  std::cout << "total updates " << total << ", mean updates/s "
            << static_cast<uint64_t>(total / secs) << ", checksum "
            << (actual == expected ? "ok" : "MISMATCH: table corrupted") << std::endl;
  ::munmap(raw, mapLen);
  return actual == expected ? 0 : 3;
}

// tierd-churn: a table that writer threads keep rewriting and re-reading while something moves it
// between nodes (rig: churn), counting every word that does not read back what was written.
//
// The table (--size, rounded up to 2 MiB) is one anonymous mapping, 2 MiB aligned, advised
// MADV_HUGEPAGE (--backing thp) or MADV_NOHUGEPAGE (--backing anon), bound to --node (MPOL_BIND)
// before first touch. It is split into --threads equal slices, one writer thread each. A writer
// repeats passes g = 1, 2, ...: it writes word i of its slice as splitmix(i, g), then reads the
// whole slice back and counts each word that differs (a lost or torn write: a migration that
// copied a page and lost a store made after the copy shows up here), then sleeps
// --pass-interval-ms (default 0: a light workload for the rig). On SIGTERM/SIGINT (or after
// --seconds) the writers finish their current pass and the program prints
//   tierd-churn: passes P words_checked W mismatches M
// and exits 0 when M is 0, 3 otherwise. --comm NAME sets the thread name (prctl PR_SET_NAME,
// what /proc/PID/comm shows) before anything else: a process that only looks like another
// program (rig: fleet-safety). The first line on stdout, once the table is populated, is:
//   tierd-churn pid P table 0xA-0xB bytes N backing thp|anon
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
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
  std::string backing = "thp";
  int node = -1;
  unsigned threads = 1;
  uint64_t seconds = 600;
  std::string comm;
  uint64_t passIntervalMs = 0;
};

void usage(std::ostream& out) {
  out << "usage: tierd-churn [--size BYTES[KMG]] [--backing thp|anon] [--node N] [--threads N]\n"
         "                   [--seconds N] [--comm NAME] [--pass-interval-ms N]\n"
         "Writer threads rewrite and re-read a table in passes and count the words that do not\n"
         "read back what was written; on SIGTERM (or after --seconds) prints\n"
         "'tierd-churn: passes P words_checked W mismatches M': exit 0 if M is 0, else 3.\n";
}

bool parseSize(const std::string& s, uint64_t& out) {
  auto n = tierd::workloads::parseSizeArg(s, "size", uint64_t{1} << 40);
  if (n) out = *n;
  return n.ok();
}

/// The value word `i` holds after pass `g` (pass 0 is the first touch).
uint64_t wordValue(uint64_t i, uint64_t g) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + g * 0xD1B54A32D192ED03ull + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t monotonicMs() {
  return tierd::monotonicNs() / 1'000'000u;
}

struct WriterResult {
  uint64_t passes = 0;
  uint64_t checked = 0;
  uint64_t mismatches = 0;
};

/// One writer: passes over words [first, first + count) of `table` until a stop is requested or
/// the deadline passes; the first pass starts from the first-touch values (pass 0).
void writer(volatile uint64_t* table, uint64_t first, uint64_t count, uint64_t deadlineMs,
            uint64_t pauseMs, WriterResult& r) {
  for (uint64_t g = 1; !gStopRequested && monotonicMs() < deadlineMs; ++g) {
    for (uint64_t i = first; i < first + count; ++i)
      table[i] = wordValue(i, g);
    for (uint64_t i = first; i < first + count; ++i) {
      if (table[i] != wordValue(i, g)) ++r.mismatches;
    }
    r.checked += count;
    ++r.passes;
    if (pauseMs > 0) {
      timespec ts{static_cast<time_t>(pauseMs / 1000),
                  static_cast<long>(pauseMs % 1000) * 1000000L};
      ::nanosleep(&ts, nullptr);
    }
  }
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
      std::cerr << "tierd-churn: " << a << " needs a value (or is unknown)\n";
      return 2;
    }
    const std::string v = args[++i];
    bool ok = true;
    if (a == "--size") {
      ok = parseSize(v, o.sizeBytes) && o.sizeBytes > 0;
    } else if (a == "--backing") {
      o.backing = v;
      ok = v == "thp" || v == "anon";
    } else if (a == "--pass-interval-ms") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() <= 60000;
      if (ok) o.passIntervalMs = n.value();
    } else if (a == "--node" || a == "--threads" || a == "--seconds") {
      auto n = tierd::sys::parseU64(v, a);
      ok = n.ok() && n.value() >= (a == "--node" ? 0u : 1u) && n.value() < 1000000;
      if (ok && a == "--node") o.node = static_cast<int>(n.value());
      if (ok && a == "--threads") o.threads = static_cast<unsigned>(n.value());
      if (ok && a == "--seconds") o.seconds = n.value();
    } else if (a == "--comm") {
      o.comm = v;
      ok = !v.empty() && v.size() < 16;  // TASK_COMM_LEN - 1
    } else {
      std::cerr << "tierd-churn: unknown option " << a << "\n";
      usage(std::cerr);
      return 2;
    }
    if (!ok) {
      std::cerr << "tierd-churn: bad value '" << v << "' for " << a << "\n";
      return 2;
    }
  }
  if (!o.comm.empty() && ::prctl(PR_SET_NAME, o.comm.c_str(), 0, 0, 0) != 0) {
    std::cerr << "tierd-churn: prctl(PR_SET_NAME) failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = requestStop;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);

  const uint64_t huge = 2 * tierd::kMiB;
  const uint64_t len = (o.sizeBytes + huge - 1) / huge * huge;
  // Over-allocate by one huge page and trim so the table starts 2 MiB aligned (THPs need it).
  void* raw =
      ::mmap(nullptr, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::cerr << "tierd-churn: mmap of " << tierd::formatBytes(len)
              << " failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + huge - 1) / huge * huge;
  if (aligned > base) ::munmap(raw, aligned - base);
  if (aligned + len < base + len + huge)
    ::munmap(reinterpret_cast<void*>(aligned + len), base + len + huge - (aligned + len));
  auto* table = reinterpret_cast<uint64_t*>(aligned);
  if (::madvise(table, len, o.backing == "thp" ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
    std::cerr << "tierd-churn: madvise failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (o.node >= 0) {
    if (numa_available() < 0 || o.node > numa_max_node()) {
      std::cerr << "tierd-churn: node " << o.node << " does not exist\n";
      return 1;
    }
    numa_tonode_memory(table, len, o.node);  // mbind(MPOL_BIND) before first touch
  }
  const uint64_t words = len / 8;
  for (uint64_t i = 0; i < words; ++i)
    table[i] = wordValue(i, 0);
  std::printf("tierd-churn pid %d table 0x%lx-0x%lx bytes %llu backing %s\n",
              static_cast<int>(::getpid()), static_cast<unsigned long>(aligned),
              static_cast<unsigned long>(aligned + len), static_cast<unsigned long long>(len),
              o.backing.c_str());
  std::fflush(stdout);

  const uint64_t deadline = monotonicMs() + o.seconds * 1000u;
  std::vector<WriterResult> results(o.threads);
  std::vector<std::thread> writers;
  const uint64_t slice = words / o.threads;
  for (unsigned t = 0; t < o.threads; ++t) {
    const uint64_t first = t * slice;
    const uint64_t count = t + 1 == o.threads ? words - first : slice;
    writers.emplace_back(writer, table, first, count, deadline, o.passIntervalMs,
                         std::ref(results[t]));
  }
  for (auto& w : writers)
    w.join();
  WriterResult sum;
  for (const auto& r : results) {
    sum.passes += r.passes;
    sum.checked += r.checked;
    sum.mismatches += r.mismatches;
  }
  std::printf("tierd-churn: passes %llu words_checked %llu mismatches %llu\n",
              static_cast<unsigned long long>(sum.passes),
              static_cast<unsigned long long>(sum.checked),
              static_cast<unsigned long long>(sum.mismatches));
  return sum.mismatches == 0 ? 0 : 3;
}

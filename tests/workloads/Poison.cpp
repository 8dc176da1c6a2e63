// tierd-poison: a poisoned page fails its own migration cleanly while the rest of the batch moves
// (kernel-patches/7.3 patch 1 changes the machine-check-safe copy of migration, patch 3
// hands the copy to an engine). Run in the rig on every kernel (scenarios migrate and
// migrate-offload).
//
// Steps, on one buffer of --size bytes bound to --from:
//   1. map it as --kind 4k (MADV_NOHUGEPAGE), thp (MADV_HUGEPAGE; the scenario sets THP to
//      madvise or always) or hugetlb-2M (MAP_HUGETLB, from the pool of --from), write a pattern
//      (each 8-byte word holds its own offset mixed with a seed), check every page is on --from;
//   2. inject a memory error into one 4 KiB page in the middle (madvise(MADV_HWPOISON): the
//      kernel's memory_failure() as for a real uncorrected error, needs CAP_SYS_ADMIN and
//      CONFIG_MEMORY_FAILURE); its folio is the poisoned unit: the 4 KiB page itself for 4k and
//      for a THP the kernel could split, the whole 2 MiB page for hugetlb-2M (or an unsplit THP);
//   3. one move_pages(2) call of the whole buffer to --to (one address per 4 KiB, one per 2 MiB
//      page for hugetlb-2M); with --external, instead: print "poison: ready pid PID range
//      0xSTART-0xEND" and wait for SIGUSR1 while another program moves the buffer (the hwpoison
//      scenario runs `tierctl move`), then take the pages' nodes as their statuses;
//   4. expect: the call returns >= 0 (no error for the whole batch), the poisoned unit's entries
//      carry a negative status (the poisoned page is not migrated, and nothing reports it moved),
//      every other page is on --to (asked again after the call) and reads back its pattern, other
//      statuses are the target node (or -EBUSY for the second 4 KiB of a THP the kernel moved:
//      see `othersOk`), and reading the poisoned page raises SIGBUS (the poison is real and was
//      not silently migrated away). The injection itself sends this process SIGBUS
//      (BUS_MCEERR_AR): counted and survived.
// Output: lines "poison: ..." and one JSON object on the last line:
//   {"kind", "size_bytes", "from", "to", "poisoned_offset", "poisoned_unit_bytes",
//    "hardware_corrupted_kb_delta", "call_return", "moved_pages", "unit_statuses": {"-2": n..},
//    "other_statuses": {"-16": n..} (other pages whose status is not the target node),
//    "other_not_moved" (other pages not on the target after the call), "data_ok", "sigbus", "pass"}
// Exit 0 PASS, 1 FAIL, 2 when the setup cannot be built (fewer than 2 nodes, mmap, mbind or
// MADV_HWPOISON refused).
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "tests/workloads/SizeArg.h"

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHuge = 2ULL << 20;
constexpr uint64_t kSeed = 0x9e3779b97f4a7c15ULL;

[[noreturn]] void setupFailed(const std::string& what) {
  std::fprintf(stderr, "poison: cannot build the setup: %s%s%s\n", what.c_str(), errno ? ": " : "",
               errno ? std::strerror(errno) : "");
  std::exit(2);
}

uint64_t pattern(uint64_t offset) {
  return (offset * kSeed) ^ (offset >> 7);
}

// The first "KEY %ld kB" line of `file` (kB), -1 if none.
long kbLine(const char* file, const char* format) {
  FILE* f = std::fopen(file, "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, format, &kb) == 1) break;
  std::fclose(f);
  return kb;
}

// HardwareCorrupted of /proc/meminfo (kB): memory_failure() adds each poisoned page.
long hardwareCorruptedKb() {
  return kbLine("/proc/meminfo", "HardwareCorrupted: %ld kB");
}

sigjmp_buf gJump;
volatile sig_atomic_t gSigbusCode = 0;

void onSigbus(int, siginfo_t* info, void*) {
  gSigbusCode = info->si_code;
  siglongjmp(gJump, 1);
}

// Installs `handler` (SA_SIGINFO) for SIGBUS; returns the disposition it replaced.
struct sigaction installSigbusHandler(void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old);
  return old;
}

// Whether reading the 8 bytes at `p` raises SIGBUS; `code` gets its si_code.
bool readRaisesSigbus(const volatile uint64_t* p, int& code) {
  const struct sigaction old = installSigbusHandler(onSigbus);
  bool raised = false;
  if (sigsetjmp(gJump, 1) == 0) {
    (void)*p;
  } else {
    raised = true;
    code = gSigbusCode;
  }
  sigaction(SIGBUS, &old, nullptr);
  return raised;
}

volatile sig_atomic_t gInjectSignals = 0;
volatile sig_atomic_t gInjectCode = 0;

void onInjectSigbus(int, siginfo_t* info, void*) {
  gInjectSignals = gInjectSignals + 1;
  gInjectCode = info->si_code;
}

// madvise(MADV_HWPOISON) of the 4 KiB page at `p`. memory_failure() treats the injection as an
// error the process hit (MF_ACTION_REQUIRED) and, the page being mapped and dirty, sends the
// caller SIGBUS with si_code BUS_MCEERR_AR as the syscall returns; the handler counts it and
// returns (nothing to retry: no instruction faulted). `signals`/`code`: what arrived.
bool injectPoison(char* p, int& signals, int& code) {
  const struct sigaction old = installSigbusHandler(onInjectSigbus);
  const bool ok = madvise(p, kPage, MADV_HWPOISON) == 0;
  sigaction(SIGBUS, &old, nullptr);
  signals = gInjectSignals;
  code = gInjectCode;
  return ok;
}

struct Options {
  std::string kind = "thp";
  uint64_t size = 64ULL << 20;
  int from = 0;
  int to = 1;
  bool external = false;  // --external: another program moves the buffer (see the top)
};

Options parse(int argc, char** argv) {
  Options o;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: tierd-poison [--kind 4k|thp|hugetlb-2M] [--size BYTES] [--from N] "
                 "[--to N] [--external]\n");
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--external") {
      o.external = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    const std::string v = argv[++i];
    if (a == "--kind") {
      o.kind = v;
    } else if (a == "--size") {
      auto s = tierd::workloads::parseSizeArg(v, "--size");
      if (!s) usage();
      o.size = *s;
    } else if (a == "--from") {
      o.from = std::atoi(v.c_str());
    } else if (a == "--to") {
      o.to = std::atoi(v.c_str());
    } else {
      usage();
    }
  }
  if (o.kind != "4k" && o.kind != "thp" && o.kind != "hugetlb-2M") usage();
  if (o.size < 4 * kHuge || o.size % kHuge != 0) {
    std::fprintf(stderr, "poison: --size must be a multiple of 2 MiB and at least 8 MiB\n");
    std::exit(2);
  }
  if (o.from < 0 || o.to < 0 || o.from > 62 || o.to > 62 || o.from == o.to) usage();
  return o;
}

char* mapBuffer(const Options& o) {
  const bool hugetlb = o.kind == "hugetlb-2M";
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hugetlb ? MAP_HUGETLB : 0);
  // Over-allocate so the buffer starts 2 MiB aligned (THP needs aligned PMDs).
  const uint64_t len = hugetlb ? o.size : o.size + kHuge;
  void* r = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (r == MAP_FAILED) setupFailed("mmap of " + std::to_string(len) + " bytes (" + o.kind + ")");
  auto base = reinterpret_cast<uintptr_t>(r);
  if (!hugetlb) base = (base + kHuge - 1) & ~(kHuge - 1);
  char* p = reinterpret_cast<char*>(base);
  if (o.kind == "4k" && madvise(p, o.size, MADV_NOHUGEPAGE) != 0) setupFailed("MADV_NOHUGEPAGE");
  if (o.kind == "thp" && madvise(p, o.size, MADV_HUGEPAGE) != 0) setupFailed("MADV_HUGEPAGE");
  unsigned long mask = 1UL << o.from;
  if (mbind(p, o.size, MPOL_BIND, &mask, sizeof(mask) * 8, 0) != 0) setupFailed("mbind");
  auto* w = reinterpret_cast<uint64_t*>(p);
  for (uint64_t i = 0; i < o.size / 8; ++i)
    w[i] = pattern(i * 8);
  return p;
}

std::vector<int> statuses(std::vector<void*> addrs, const int* nodes, int flags) {
  std::vector<int> st(addrs.size(), 12345);
  long r = move_pages(0, addrs.size(), addrs.data(), nodes, st.data(), flags);
  if (r < 0) setupFailed("move_pages(nodes=NULL)");
  return st;
}

// The buffer's page addresses (one per 4 KiB, one per 2 MiB for hugetlb-2M), after checking the
// setup: most of a thp buffer in THPs, every page on --from. Exit 2 otherwise.
std::vector<void*> pageAddresses(const Options& o, char* buf, uint64_t step) {
  std::vector<void*> addrs;
  for (uint64_t off = 0; off < o.size; off += step)
    addrs.push_back(buf + off);
  if (o.kind == "thp") {
    // The case is a poisoned page inside a THP: most of the buffer must be PMD-mapped THPs.
    const long thpKb = kbLine("/proc/self/smaps_rollup", "AnonHugePages: %ld kB");
    std::printf("poison: AnonHugePages of the process %ld kB\n", thpKb);
    errno = 0;
    if (thpKb < static_cast<long>(o.size / 2 / 1024))
      setupFailed("fewer than half of the buffer in THPs (is THP enabled?)");
  }
  auto st = statuses(addrs, nullptr, 0);
  for (size_t i = 0; i < st.size(); ++i)
    if (st[i] != o.from) {
      errno = 0;
      setupFailed("page " + std::to_string(i) + " is on " + std::to_string(st[i]) + ", not node " +
                  std::to_string(o.from));
    }
  return addrs;
}

// The byte range [start, start + len) of the buffer the poison took away.
struct Unit {
  uint64_t start = 0;
  uint64_t len = 0;
  bool contains(uint64_t off) const { return off >= start && off < start + len; }
};

// What one move_pages call of the whole buffer did, and what is true afterwards.
struct Outcome {
  long ret = 0;
  int callErr = 0;
  std::map<int, uint64_t> unitStatuses;   // status -> entries, inside the poisoned unit
  std::map<int, uint64_t> otherStatuses;  // status -> entries elsewhere, not the target node
  uint64_t moved = 0;                     // entries elsewhere whose status is the target node
  uint64_t misplaced = 0;                 // pages elsewhere not on the target when asked again
  uint64_t unitOnTarget = 0;              // pages of the unit on the target when asked again
  uint64_t badWords = 0;                  // 8-byte words outside the unit that lost their pattern
};

// Blocks SIGUSR1 (before the injection, so that it queues), prints the ready line with the
// buffer's range, and waits for SIGUSR1: --external's hand-off to the program that moves it.
void awaitExternalMove(const char* buf, uint64_t size) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  const uint64_t start = reinterpret_cast<uintptr_t>(buf);
  const uint64_t end = start + size;
  std::printf("poison: ready pid %d range 0x%llx-0x%llx\n", static_cast<int>(getpid()),
              static_cast<unsigned long long>(start), static_cast<unsigned long long>(end));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
}

Outcome moveAll(const Options& o, char* buf, std::vector<void*>& addrs, uint64_t step, Unit unit) {
  Outcome r;
  std::vector<int> target(addrs.size(), o.to);
  std::vector<int> st(addrs.size(), 12345);
  if (o.external) {
    // Moved by someone else: the statuses are where the pages are now.
    awaitExternalMove(buf, o.size);
    st = statuses(addrs, nullptr, 0);
  } else {
    r.ret = move_pages(0, addrs.size(), addrs.data(), target.data(), st.data(), MPOL_MF_MOVE);
    r.callErr = r.ret < 0 ? errno : 0;
  }
  for (size_t i = 0; i < addrs.size(); ++i) {
    const uint64_t off = i * step;
    if (unit.contains(off)) {
      r.unitStatuses[st[i]] += 1;
    } else if (st[i] == o.to) {
      ++r.moved;
    } else if (++r.otherStatuses[st[i]] <= 2) {
      std::printf("poison: page at 0x%llx (0x%llx into its 2 MiB) reported status %d\n",
                  static_cast<unsigned long long>(off),
                  static_cast<unsigned long long>(off & (kHuge - 1)), st[i]);
    }
  }
  // Where the pages are now (the move's statuses could claim what did not happen).
  auto now = statuses(addrs, nullptr, 0);
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (unit.contains(i * step))
      r.unitOnTarget += now[i] == o.to;
    else
      r.misplaced += now[i] != o.to;
  }
  // Every word outside the poisoned unit still holds its pattern.
  const auto* w = reinterpret_cast<const uint64_t*>(buf);
  for (uint64_t i = 0; i < o.size / 8; ++i)
    if (!unit.contains(i * 8)) r.badWords += w[i] != pattern(i * 8);
  return r;
}

// {"status": count, ...} of a status histogram.
std::string histogramJson(const std::map<int, uint64_t>& h) {
  std::string js;
  for (const auto& [s, n] : h)
    js +=
        std::string(js.empty() ? "" : ", ") + "\"" + std::to_string(s) + "\": " + std::to_string(n);
  return "{" + js + "}";
}

// The whole case (see the top of the file); returns main's exit code.
int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.external) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, nullptr);
  }
  if (numa_available() < 0 || numa_max_node() < std::max(o.from, o.to)) {
    errno = 0;
    setupFailed("needs nodes " + std::to_string(o.from) + " and " + std::to_string(o.to));
  }
  const bool hugetlb = o.kind == "hugetlb-2M";
  const uint64_t step = hugetlb ? kHuge : kPage;
  char* buf = mapBuffer(o);
  std::vector<void*> addrs = pageAddresses(o, buf, step);

  // A tail page in the middle (not a THP's head), so the kernel must split the THP around it.
  const uint64_t poisonOff = o.size / 2 + 5 * kPage;
  const long hc0 = hardwareCorruptedKb();
  int injectSignals = 0, injectCode = 0;
  if (!injectPoison(buf + poisonOff, injectSignals, injectCode))
    setupFailed("madvise(MADV_HWPOISON)");
  const long hc1 = hardwareCorruptedKb();
  std::printf(
      "poison: %s, %llu MiB on node %d, poisoned offset 0x%llx; HardwareCorrupted +%ld kB; "
      "the injection sent %d SIGBUS (si_code %d)\n",
      o.kind.c_str(), static_cast<unsigned long long>(o.size >> 20), o.from,
      static_cast<unsigned long long>(poisonOff), hc1 - hc0, injectSignals, injectCode);
  // The poisoned unit: what the kernel could no longer keep mapped. A split THP loses one 4 KiB
  // page; an unsplit THP or a hugetlb page the whole 2 MiB (every address there reads SIGBUS).
  Unit unit{poisonOff & ~(step - 1), step};
  if (hugetlb || (o.kind == "thp" && hc1 - hc0 >= static_cast<long>(kHuge / 1024)))
    unit = Unit{poisonOff & ~(kHuge - 1), kHuge};

  const Outcome r = moveAll(o, buf, addrs, step, unit);
  int code = 0;
  const bool sigbus =
      readRaisesSigbus(reinterpret_cast<const volatile uint64_t*>(buf + poisonOff), code);

  bool unitFailed = true;
  for (const auto& [s, n] : r.unitStatuses)
    if (s >= 0) unitFailed = false;
  // 7.3 answers -EBUSY for the second 4 KiB address of every THP it moves: the first address
  // isolated the folio, the second finds it isolated (-EBUSY), which flushes the batch; the THP
  // still moves (placement is checked with the second query). Any other status is a failure.
  bool othersOk = true;
  for (const auto& [s, n] : r.otherStatuses)
    if (!(s == -EBUSY && o.kind == "thp")) othersOk = false;
  const bool pass = r.ret >= 0 && unitFailed && r.unitOnTarget == 0 && othersOk &&
                    r.misplaced == 0 && r.badWords == 0 && sigbus && hc1 > hc0;
  std::printf(
      "poison: move_pages returned %ld%s%s; %llu pages report node %d, other statuses %s, "
      "%llu not on node %d now\n",
      r.ret, r.callErr ? " errno " : "", r.callErr ? std::strerror(r.callErr) : "",
      static_cast<unsigned long long>(r.moved), o.to, histogramJson(r.otherStatuses).c_str(),
      static_cast<unsigned long long>(r.misplaced), o.to);
  std::printf("poison: poisoned unit (%llu KiB at 0x%llx): statuses %s, %llu on node %d now\n",
              static_cast<unsigned long long>(unit.len >> 10),
              static_cast<unsigned long long>(unit.start), histogramJson(r.unitStatuses).c_str(),
              static_cast<unsigned long long>(r.unitOnTarget), o.to);
  std::printf(
      "poison: data outside the poisoned unit %s (%llu bad words); reading the poisoned "
      "page %s (si_code %d)\n",
      r.badWords ? "CHANGED" : "intact", static_cast<unsigned long long>(r.badWords),
      sigbus ? "raises SIGBUS" : "does NOT raise SIGBUS", code);
  std::printf("poison: %s\n", pass ? "PASS" : "FAIL");
  std::printf(
      "{\"kind\": \"%s\", \"size_bytes\": %llu, \"from\": %d, \"to\": %d, \"poisoned_offset\": "
      "%llu, \"poisoned_unit_bytes\": %llu, \"hardware_corrupted_kb_delta\": %ld, "
      "\"call_return\": %ld, \"moved_pages\": %llu, \"unit_statuses\": %s, "
      "\"other_statuses\": %s, \"other_not_moved\": %llu, \"data_ok\": %s, \"sigbus\": %s, "
      "\"pass\": %s}\n",
      o.kind.c_str(), static_cast<unsigned long long>(o.size), o.from, o.to,
      static_cast<unsigned long long>(poisonOff), static_cast<unsigned long long>(unit.len),
      hc1 - hc0, r.ret, static_cast<unsigned long long>(r.moved),
      histogramJson(r.unitStatuses).c_str(), histogramJson(r.otherStatuses).c_str(),
      static_cast<unsigned long long>(r.misplaced), r.badWords ? "false" : "true",
      sigbus ? "true" : "false", pass ? "true" : "false");
  return pass ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // std::bad_alloc, std::string's length_error
    std::fprintf(stderr, "poison: %s\n", e.what());
    return 2;
  }
}

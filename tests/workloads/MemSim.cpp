// tierd-memsim: the guest side of the rig's memsim TCG plugin (tests/vm/memsim), and the small
// memory probes of the memsim-calibrate scenario.
//
// The plugin publishes its counters to the results share ($RIG_OUT/memsim.stats, format in
// tests/vm/memsim/README.md) at least 5 times a second. Subcommands:
//   mark FILE                 waits for a fresh publication, copies it to FILE (a mark)
//   mem [--since FILE]        LLC-model misses per node, user/kernel reads/writes, since a mark
//   heat PID [--since FILE]   per 2 MiB virtual region of PID: accesses and misses (from the
//                             per-2 MiB-frame counts through /proc/PID/pagemap) and its node
//   ranges                    the plugin's node ranges against the kernel's memory blocks
//                             (/sys/devices/system/node/nodeN/memoryM)
//   chase --node N --size B [--reps R] [--loads L]
//                             pointer chase on node 0 and node N in interleaved rounds (a cycle
//                             that misses the LLC model on every load over few pages): ns per
//                             dependent load, LLC-model miss fraction, and per load the ns the
//                             plugin charged against what its model says (every miss charged
//                             once, at its node's charge)
//   stream --node N --size B [--reps R]  sequential 8-byte loads over B bytes: MB/s
//   gups --node N --size B [--reps R] [--loads L]    random XOR updates on node 0 and node N in
//                             interleaved rounds: updates/s and misses per update
//   count --node N --size B   N reads then N writes of distinct cache lines on node N; the plugin
//                             must count each as one user miss on node N (within 1%)
//   spin [--reps R] [--loads L]  gups's update loop on a 16 KiB table (no cache misses): ns per
//                             update, the best of R rounds of L updates. run.sh times it on the
//                             host, rig_mem_dilate in the guest: the ratio is TCG's slowdown
//                             (memsim=dilated)
// The stats file is $MEMSIM_STATS, else $RIG_OUT/memsim.stats. Exit status 1 when a check fails,
// 2 on a usage or system error.

#include <dirent.h>
#include <fcntl.h>
#include <numaif.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/workloads/SizeArg.h"
#include "tierd/core/Numbers.h"
#include "tierd/sys/Parsers.h"

namespace {

constexpr uint64_t kFrameShift = 21;
constexpr uint64_t kRegion = 2ull << 20;
constexpr uint64_t kLine = 64;

[[noreturn]] void die(const std::string& what) {
  std::cerr << "tierd-memsim: " << what << "\n";
  std::exit(2);
}

/// "0x" and 1-16 hex digits (the plugin's range bounds), or nullopt.
std::optional<uint64_t> parseHex0x(const std::string& s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  return tierd::sys::parseHexDigits(std::string_view(s).substr(2), true);
}

struct Range {
  int node;
  uint64_t start, end;  // guest-physical [start, end)
};

/// One publication of the plugin: its counters and per-frame counts.
struct Stats {
  uint64_t seq = 0;
  bool final = false;
  std::vector<Range> ranges;
  std::map<int, std::array<uint64_t, 4>>
      nodes;  // user reads, user writes, kernel reads, kernel writes
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> frames;  // frame -> accesses, misses
  std::map<int, uint64_t> charge;  // node -> ns charged per LLC-model miss ("charge N NS")
  uint64_t chargedNs = 0;          // ns charged to the vCPUs since boot ("charged_ns")
  uint64_t delayNs = 0;            // ns the vCPUs spent in their waits since boot ("delay_ns")
  std::string text;

  int nodeOf(uint64_t gpa) const {
    for (const auto& r : ranges)
      if (gpa >= r.start && gpa < r.end) return r.node;
    return -1;
  }
};

std::string statsPath() {
  if (const char* p = std::getenv("MEMSIM_STATS")) return p;
  const char* out = std::getenv("RIG_OUT");
  return std::string(out ? out : "/mnt/out") + "/memsim.stats";
}

bool parseStats(const std::string& text, Stats& s) {
  std::istringstream in(text);
  std::string line;
  bool end = false;
  s = Stats{};
  s.text = text;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string k;
    l >> k;
    if (k == "seq") {
      l >> s.seq;
    } else if (k == "final") {
      int f = 0;
      l >> f;
      s.final = f != 0;
    } else if (k == "range") {
      Range r{};
      std::string a, b;
      l >> r.node >> a >> b;
      auto start = parseHex0x(a), stop = parseHex0x(b);
      if (!start || !stop) return false;
      r.start = *start;
      r.end = *stop;
      s.ranges.push_back(r);
    } else if (k == "node") {
      int n;
      std::array<uint64_t, 4> c{};
      l >> n >> c[0] >> c[1] >> c[2] >> c[3];
      s.nodes[n] = c;
    } else if (k == "charge") {
      int n;
      uint64_t ns;
      l >> n >> ns;
      s.charge[n] = ns;
    } else if (k == "charged_ns") {
      l >> s.chargedNs;
    } else if (k == "delay_ns") {
      l >> s.delayNs;
    } else if (k == "frame") {
      uint64_t f, a, m;
      l >> f >> a >> m;
      s.frames[f] = {a, m};
    } else if (k == "end") {
      end = true;
    }
  }
  return end && s.seq > 0;
}

Stats readStats(const std::string& path) {
  for (int tries = 0; tries < 50; ++tries) {
    std::ifstream f(path);
    if (f) {
      std::stringstream b;
      b << f.rdbuf();
      Stats s;
      if (parseStats(b.str(), s)) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  die("no complete memsim publication in " + path +
      " (is the scenario's header '# rig: memsim=count' or 'cost'?)");
}

/// A publication made after this call started: waits until seq advanced by 2 (one whole
/// publication began after everything the caller did before).
bool gStatsOptional = false;  // chase and gups also run without the plugin (no miss fractions)

Stats freshStats() {
  const std::string path = statsPath();
  if (gStatsOptional && access(path.c_str(), R_OK) != 0) return Stats{};
  const uint64_t seq0 = readStats(path).seq;
  for (int i = 0; i < 200; ++i) {
    Stats s = readStats(path);
    if (s.seq >= seq0 + 2 || s.final) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  die("the memsim publication in " + path + " stopped advancing");
}

uint64_t userReads(const Stats& s, int node) {
  auto it = s.nodes.find(node);
  return it == s.nodes.end() ? 0 : it->second[0];
}

// LLC-model misses on node since boot, user and kernel, reads and writes.
uint64_t missesOn(const Stats& s, int node) {
  auto it = s.nodes.find(node);
  if (it == s.nodes.end()) return 0;
  return it->second[0] + it->second[1] + it->second[2] + it->second[3];
}

// Between two publications: the ns the plugin charged (charged) and what its model says it
// should have (model: each node's misses times that node's charge, every miss charged once).
void addCharges(const Stats& a, const Stats& b, double& charged, double& model) {
  charged += double(b.chargedNs - a.chargedNs);
  for (const auto& [node, ns] : b.charge)
    model += double(ns) * double(missesOn(b, node) - missesOn(a, node));
}

Stats loadMark(const std::string& file) {
  std::ifstream f(file);
  if (!f) die("cannot read mark " + file);
  std::stringstream b;
  b << f.rdbuf();
  Stats s;
  if (!parseStats(b.str(), s)) die(file + " is not a memsim mark");
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Per-node times of interleaved rounds (times[k][r]: node k, round r) -> t[0]: node 0's median
// round; t[1]: that plus the median of the rounds' node 1 - node 0 differences (adjacent rounds
// share the host's load, so the difference is what is robust).
void pairedMedians(const std::vector<double> (&times)[2], double (&t)[2]) {
  std::vector<double> diff;
  for (size_t r = 0; r < times[0].size() && r < times[1].size(); ++r)
    diff.push_back(times[1][r] - times[0][r]);
  t[0] = median(times[0]);
  t[1] = t[0] + median(diff);
}

double nowSec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

/// bytes of anonymous memory bound to node, populated (THP when possible).
uint64_t* allocOn(int node, uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap: " + std::string(std::strerror(errno)));
  madvise(p, bytes, MADV_HUGEPAGE);
  unsigned long mask[4] = {0, 0, 0, 0};
  mask[node / 64] = 1ul << (node % 64);
  if (mbind(p, bytes, MPOL_BIND, mask, 256, 0) != 0)
    die("mbind: " + std::string(std::strerror(errno)));
  std::memset(p, 1, bytes);
  return static_cast<uint64_t*>(p);
}

struct Args {
  int node = 0;
  uint64_t size = 256ull << 20;
  int reps = 3;
  uint64_t loads = 200000;
  std::string since;
};

uint64_t parseSize(const std::string& option, const std::string& s) {
  auto v = tierd::workloads::parseSizeArg(s, option);
  if (!v) die(v.error().describe());
  return *v;
}

/// `s` as a decimal integer in lo..hi, or exits 2 naming `option`.
int parseIntArg(const std::string& option, const std::string& s, uint64_t lo, uint64_t hi) {
  auto v = tierd::parseU64InRange(s, lo, hi, option);
  if (!v) die(v.error().describe());
  return static_cast<int>(*v);
}

Args parseArgs(int argc, char** argv, int from) {
  Args a;
  for (int i = from; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) die("missing value after " + k);
    std::string v = argv[++i];
    if (k == "--node")
      a.node = parseIntArg(k, v, 0, 1023);
    else if (k == "--size")
      a.size = parseSize(k, v);
    else if (k == "--reps")
      a.reps = parseIntArg(k, v, 1, 1000000);
    else if (k == "--loads")
      a.loads = parseSize(k, v);
    else if (k == "--since")
      a.since = v;
    else
      die("unknown option " + k);
  }
  return a;
}

int cmdMark(const std::string& file) {
  Stats s = freshStats();
  std::ofstream f(file);
  f << s.text;
  if (!f) die("cannot write " + file);
  return 0;
}

int cmdMem(const Args& a) {
  Stats now = freshStats();
  Stats base;
  if (!a.since.empty()) base = loadMark(a.since);
  std::cout << "node user_reads user_writes kernel_reads kernel_writes (LLC-model misses"
            << (a.since.empty() ? " since boot" : " since the mark") << ")\n";
  for (const auto& [n, c] : now.nodes) {
    auto b = base.nodes.count(n) ? base.nodes.at(n) : std::array<uint64_t, 4>{};
    std::cout << n;
    for (int i = 0; i < 4; ++i)
      std::cout << " " << (c[i] - b[i]);
    std::cout << "\n";
  }
  return 0;
}

int cmdHeat(int pid, const Args& a) {
  Stats now = freshStats();
  Stats base;
  if (!a.since.empty()) base = loadMark(a.since);
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) die("no process " + std::to_string(pid));
  int pm = open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY);
  if (pm < 0) die("cannot open pagemap of " + std::to_string(pid) + ": " + std::strerror(errno));
  struct Heat {
    double acc = 0, miss = 0;
    int node = -1;
  };
  std::map<uint64_t, Heat> regions;
  std::string line;
  std::vector<uint64_t> buf;
  while (std::getline(maps, line)) {
    uint64_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2 || hi <= lo) continue;
    if (lo >= 0x0000800000000000ull) continue;  // [vsyscall]
    const uint64_t pages = (hi - lo) / 4096;
    buf.resize(pages);
    ssize_t got = pread(pm, buf.data(), pages * 8, off_t(lo / 4096 * 8));
    if (got < 0) continue;
    for (uint64_t i = 0; i < uint64_t(got) / 8; ++i) {
      const uint64_t e = buf[i];
      if (!(e >> 63)) continue;  // not present
      const uint64_t pfn = e & ((1ull << 55) - 1);
      const uint64_t gpa = pfn << 12, frame = gpa >> kFrameShift;
      auto it = now.frames.find(frame);
      Heat& h = regions[(lo + i * 4096) & ~(kRegion - 1)];
      if (h.node < 0) h.node = now.nodeOf(gpa);
      if (it == now.frames.end()) continue;
      double fa = double(it->second.first), fm = double(it->second.second);
      auto bt = base.frames.find(frame);
      if (bt != base.frames.end()) {
        fa -= double(bt->second.first);
        fm -= double(bt->second.second);
      }
      // A 4 KiB page gets 1/512 of its 2 MiB frame's counts: exact for a THP (its 512 pages are
      // the whole frame), an even split of the frame for base pages.
      h.acc += fa / 512;
      h.miss += fm / 512;
    }
  }
  close(pm);
  std::map<int, std::pair<double, double>> per;
  std::printf("# region node accesses misses (2 MiB virtual regions of pid %d)\n", pid);
  for (const auto& [r, h] : regions) {
    std::printf("region 0x%lx %d %.0f %.0f\n", r, h.node, h.acc, h.miss);
    per[h.node].first += h.acc;
    per[h.node].second += h.miss;
  }
  for (const auto& [n, t] : per)
    std::printf("total node %d accesses %.0f misses %.0f\n", n, t.first, t.second);
  return 0;
}

int cmdRanges() {
  Stats s = readStats(statsPath());
  std::ifstream bsf("/sys/devices/system/memory/block_size_bytes");
  std::string bss;
  if (!(bsf >> bss)) die("no /sys/devices/system/memory/block_size_bytes");
  const auto bsv = tierd::sys::parseHexDigits(bss, true);
  if (!bsv || *bsv == 0) die("bad /sys/devices/system/memory/block_size_bytes '" + bss + "'");
  const uint64_t bs = *bsv;
  int bad = 0;
  std::map<int, uint64_t> covered, declared;
  for (const auto& r : s.ranges) {
    declared[r.node] += r.end - r.start;
    std::printf("memsim range node %d 0x%lx-0x%lx (%lu MiB)\n", r.node, r.start, r.end,
                (r.end - r.start) >> 20);
  }
  DIR* d = opendir("/sys/devices/system/node");
  if (!d) die("no /sys/devices/system/node");
  while (dirent* e = readdir(d)) {
    int n;
    if (std::sscanf(e->d_name, "node%d", &n) != 1) continue;
    DIR* nd = opendir(("/sys/devices/system/node/" + std::string(e->d_name)).c_str());
    while (nd && (e = readdir(nd))) {
      uint64_t m;
      if (std::sscanf(e->d_name, "memory%lu", &m) != 1) continue;
      const uint64_t lo = m * bs, hi = lo + bs;
      int in = -1;
      for (const auto& r : s.ranges)
        if (lo >= r.start && hi <= r.end) in = r.node;
      if (in != n) {
        std::printf("MISMATCH: memory%lu (0x%lx-0x%lx) is on node %d, memsim says %s\n", m, lo, hi,
                    n, in < 0 ? "no single range" : ("node " + std::to_string(in)).c_str());
        ++bad;
      }
      covered[n] += bs;
    }
    if (nd) closedir(nd);
  }
  closedir(d);
  for (const auto& [n, bytes] : declared) {
    std::printf("node %d: memsim %lu MiB, kernel memory blocks %lu MiB\n", n, bytes >> 20,
                covered[n] >> 20);
    if (covered[n] != bytes) ++bad;
  }
  for (const auto& [n, bytes] : covered)
    if (!declared.count(n)) {
      std::printf("MISMATCH: node %d has memory blocks but no memsim range\n", n);
      ++bad;
    }
  std::printf("ranges: %s\n", bad ? "DISAGREE" : "agree");
  return bad ? 1 : 0;
}

/// A pointer cycle that misses the LLC model on every load while touching few pages (so TCG's
/// own TLB misses, hundreds of ns each under a loaded host, stay out of the measurement): in a
/// THP-backed buffer (2 MiB physically contiguous and aligned), the lines at the same offset of
/// every MiB map to the same set of a 16 MiB 16-way model; `groups` adjacent line offsets of
/// each MiB, visited in one fixed random cycle, give every set a cyclic pattern of size/1 MiB
/// lines (> its ways), which LRU always misses. Without THP the misses are fewer (measured).
uint64_t* conflictChain(int node, uint64_t bytes, unsigned groups, uint64_t seed) {
  uint64_t* buf = allocOn(node, bytes);
  const uint64_t mibs = bytes >> 20, step = kLine / 8;
  std::vector<uint64_t> slots;  // word index of each visited line
  for (uint64_t m = 0; m < mibs; ++m)
    for (unsigned g = 0; g < groups; ++g)
      slots.push_back((m << 20) / 8 + g * step);
  std::mt19937_64 rng(seed);
  for (uint64_t i = slots.size() - 1; i > 0; --i)
    std::swap(slots[i], slots[rng() % i]);
  for (uint64_t i = 0; i < slots.size(); ++i)
    buf[slots[i]] = slots[(i + 1) % slots.size()];
  return buf;
}

// Pointer chase on node 0 and --node in interleaved rounds of --loads dependent loads (host load
// changes hit both alike; best round per node): ns per load and the LLC-model miss fraction.
int cmdChase(const Args& a) {
  const int nodes[2] = {0, a.node};
  uint64_t* bufs[2] = {conflictChain(0, a.size, 4, 42), conflictChain(a.node, a.size, 4, 43)};
  uint64_t pos[2] = {0, 0};
  double misses[2] = {0, 0}, charged[2] = {0, 0}, model[2] = {0, 0};
  std::vector<double> times[2];
  for (int r = 0; r < a.reps; ++r) {
    for (int k = 0; k < 2; ++k) {
      Stats s0 = freshStats();
      uint64_t p = pos[k];
      const uint64_t* b = bufs[k];
      const double t0 = nowSec();
      for (uint64_t i = 0; i < a.loads; ++i)
        p = b[p];
      const double ns = (nowSec() - t0) * 1e9 / double(a.loads);
      Stats s1 = freshStats();
      pos[k] = p;
      times[k].push_back(ns);
      misses[k] += double(userReads(s1, nodes[k]) - userReads(s0, nodes[k]));
      addCharges(s0, s1, charged[k], model[k]);
    }
  }
  double t[2];
  pairedMedians(times, t);
  for (int k = 0; k < 2; ++k) {
    std::printf(
        "chase node %d size %lu MiB ns_per_load %.1f miss_fraction %.3f charged_ns_per_load %.1f "
        "model_ns_per_load %.1f (medians of %d interleaved rounds of %lu loads, %lu)\n",
        nodes[k], a.size >> 20, t[k], misses[k] / double(a.loads) / double(a.reps),
        charged[k] / double(a.loads) / double(a.reps), model[k] / double(a.loads) / double(a.reps),
        a.reps, a.loads, pos[k] % 2);
    munmap(bufs[k], a.size);
  }
  return 0;
}

// GUPS's inner loop: n random 64-bit XOR updates of t (mask + 1 words, a power of two) by an
// xorshift sequence continuing from x; returns the sequence's last value. gups and spin run it.
uint64_t xorUpdates(uint64_t* t, uint64_t mask, uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t[x & mask] ^= x;
  }
  return x;
}

// GUPS on node 0 and --node in interleaved rounds of --loads random 64-bit XOR updates over a
// --size table per node (like chase: median round and median difference): updates/s and the
// LLC-model misses per update.
int cmdGups(const Args& a) {
  const int nodes[2] = {0, a.node};
  const uint64_t words = a.size / 8;
  if (words & (words - 1)) die("gups --size must be a power of two");
  uint64_t* tables[2] = {allocOn(0, a.size), allocOn(a.node, a.size)};
  uint64_t rng[2] = {0x9E3779B97F4A7C15ull, 0xD1B54A32D192ED03ull};
  double misses[2] = {0, 0};
  std::vector<double> times[2];  // ns per update
  for (int r = 0; r < a.reps; ++r) {
    for (int k = 0; k < 2; ++k) {
      Stats s0 = freshStats();
      const double t0 = nowSec();
      const uint64_t x = xorUpdates(tables[k], words - 1, rng[k], a.loads);
      times[k].push_back((nowSec() - t0) * 1e9 / double(a.loads));
      Stats s1 = freshStats();
      rng[k] = x;
      misses[k] += double(userReads(s1, nodes[k]) - userReads(s0, nodes[k]));
    }
  }
  double t[2];
  pairedMedians(times, t);
  for (int k = 0; k < 2; ++k) {
    std::printf(
        "gups node %d size %lu MiB updates_per_s %.0f misses_per_update %.3f (medians of %d "
        "interleaved rounds of %lu updates)\n",
        nodes[k], a.size >> 20, 1e9 / t[k], misses[k] / double(a.loads) / double(a.reps), a.reps,
        a.loads);
    munmap(tables[k], a.size);
  }
  return 0;
}

int cmdStream(const Args& a) {
  uint64_t* buf = allocOn(a.node, a.size);
  const uint64_t words = a.size / 8;
  double best = 0;
  uint64_t sum = 0;
  for (int r = 0; r < a.reps; ++r) {
    const double t0 = nowSec();
    const volatile uint64_t* v = buf;
    for (uint64_t i = 0; i < words; ++i)
      sum += v[i];
    best = std::max(best, double(a.size) / (nowSec() - t0) / 1e6);
  }
  std::printf("stream node %d size %lu MiB MB_per_s %.1f (best of %d, sum %lu)\n", a.node,
              a.size >> 20, best, a.reps, sum % 2);
  munmap(buf, a.size);
  return 0;
}

// gups's update without its miss: gups's loop (xorUpdates) on a 16 KiB table, which stays in
// every cache (and in the plugin's LLC model). Needs no plugin. The table's sum is printed so
// that no store is dead.
int cmdSpin(const Args& a) {
  constexpr uint64_t kWords = 2048;
  std::vector<uint64_t> table(kWords, 0);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  double best = 0;
  for (int r = 0; r < a.reps; ++r) {
    const double t0 = nowSec();
    x = xorUpdates(table.data(), kWords - 1, x, a.loads);
    const double ns = (nowSec() - t0) * 1e9 / double(a.loads);
    if (r == 0 || ns < best) best = ns;
  }
  uint64_t sum = 0;
  for (uint64_t w : table)
    sum += w;
  std::printf("spin ns_per_update %.3f (best of %d rounds of %lu updates, %lu)\n", best, a.reps,
              a.loads, (x ^ sum) % 2);
  return 0;
}

int cmdCount(const Args& a) {
  const uint64_t lines = a.size / kLine, step = kLine / 8;
  uint64_t* buf = allocOn(a.node, a.size);
  volatile uint64_t* v = buf;
  int bad = 0;
  // Reads: one load per line; the lines were written by the populate, but the buffer is larger
  // than the LLC model, so by the time the loop reaches a line it was evicted.
  Stats s0 = freshStats();
  uint64_t sum = 0;
  for (uint64_t i = 0; i < lines; ++i)
    sum += v[i * step];
  Stats s1 = freshStats();
  for (uint64_t i = 0; i < lines; ++i)
    v[i * step] = i;
  Stats s2 = freshStats();
  auto delta = [&](const Stats& x, const Stats& y, int k) {
    return double(y.nodes.at(a.node)[k]) - double(x.nodes.at(a.node)[k]);
  };
  const double reads = delta(s0, s1, 0), writes = delta(s1, s2, 1);
  const double n = double(lines);
  std::printf(
      "count node %d: %lu loads counted as %.0f user reads (%.2f%%), %lu stores as %.0f user "
      "writes "
      "(%.2f%%) (sum %lu)\n",
      a.node, lines, reads, 100 * (reads - n) / n, lines, writes, 100 * (writes - n) / n, sum % 2);
  if (std::abs(reads - n) > 0.01 * n) ++bad;
  if (std::abs(writes - n) > 0.01 * n) ++bad;
  munmap(buf, a.size);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr
        << "usage: tierd-memsim mark FILE | mem [--since FILE] | heat PID [--since FILE] | ranges "
           "|\n"
           "       chase|stream|gups|count --node N --size BYTES[KMG] [--reps R] [--loads L]\n"
           "       spin [--reps R] [--loads L]\n";
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "mark" && argc == 3) return cmdMark(argv[2]);
  if (cmd == "mem") return cmdMem(parseArgs(argc, argv, 2));
  if (cmd == "heat" && argc >= 3)
    return cmdHeat(parseIntArg("heat PID", argv[2], 1, 4194304), parseArgs(argc, argv, 3));
  if (cmd == "ranges") return cmdRanges();
  gStatsOptional = cmd == "chase" || cmd == "gups";
  if (cmd == "chase") return cmdChase(parseArgs(argc, argv, 2));
  if (cmd == "stream") return cmdStream(parseArgs(argc, argv, 2));
  if (cmd == "gups") return cmdGups(parseArgs(argc, argv, 2));
  if (cmd == "count") return cmdCount(parseArgs(argc, argv, 2));
  if (cmd == "spin") return cmdSpin(parseArgs(argc, argv, 2));
  die("unknown subcommand " + cmd);
}

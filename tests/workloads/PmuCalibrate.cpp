// tierd-pmucal: calibrates a PEBS load-latency PMU against a known access stream (rig:
// pmu-calibrate, against the emulated PMU of tests/vm/pmu fed by memsim).
//
// Usage: tierd-pmucal TYPE NODE LOADS PERIOD LDLAT
//   TYPE "none": opens no event and only reads, for a sampler outside the process (`perf record`
//   in the rig's pmu-calibrate); prints "buffer=0xLO-0xHI loop=0xLO-0xHI sum=S" (half-open
//   ranges of the buffer and of the reading loop's code).
//   Binds a buffer of LOADS cache lines (64 B each) to NUMA node NODE (mbind MPOL_BIND), writes
//   it, then opens MEM_TRANS_RETIRED.LOAD_LATENCY (config 0x01cd, config1 LDLAT, precise_ip 2,
//   sample period PERIOD, user mode only) of PMU type TYPE on itself and reads each line once, in
//   order, with one load instruction. The buffer is larger than any LLC the rig models (LOADS
//   lines written before the reads, in order, evict each other), so every read misses to NODE
//   and is slower than any LDLAT below NODE's latency; nothing else the process does while the
//   event is enabled is that slow. So exactly LOADS / PERIOD samples are due.
// Prints one line: "records=R expected=E lost=L throttled=T ips=K ip_in_loop=0|1
//   addr_in_buffer=A phys_match=P phys_checked=C node_src=S weight_min=W" where ips is the number
//   of distinct sample IPs, ip_in_loop 1 when all lie in the reading loop's code, addr_in_buffer /
//   phys_match / node_src count samples whose address is in the buffer, whose physical address is
//   the one /proc/self/pagemap gives for it (C of them could be checked: pagemap shows PFNs to root
//   only), and whose data source names memory (PERF_MEM_LVLNUM_RAM or _CXL), weight_min the least
//   latency reported (cycles).
// Exit 0 when it ran (the scenario judges the numbers), 1 when a system call failed, 2 on bad
// arguments.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>

#include "tierd/sys/Parsers.h"

namespace {

constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;
constexpr size_t kRingPages = 256;  // data pages: room for every record of a run without a drain
constexpr int kMpolBind = 2;        // MPOL_BIND, <linux/mempolicy.h>

int fail(const char* what) {
  std::fprintf(stderr, "tierd-pmucal: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// The reads: one load instruction per line. noinline: the samples' IPs must lie in its code, the
// first kLoopBytes bytes from its address (it compiles to a few dozen).
constexpr uint64_t kLoopBytes = 256;
__attribute__((noinline)) uint64_t readLines(const volatile char* buf, size_t lines) {
  uint64_t sum = 0;
  for (size_t i = 0; i < lines; ++i)
    sum += buf[i * kLine];
  return sum;
}

// Physical address of `va` from /proc/self/pagemap; 0 when the PFN is hidden (not root) or absent.
uint64_t physOf(int pagemap, uint64_t va) {
  uint64_t entry = 0;
  if (pread(pagemap, &entry, sizeof entry, static_cast<off_t>(va / kPage * sizeof entry)) !=
      static_cast<ssize_t>(sizeof entry))
    return 0;
  const uint64_t pfn = entry & ((uint64_t{1} << 55) - 1);
  if (!(entry >> 63) || pfn == 0) return 0;
  return pfn * kPage + va % kPage;
}

}  // namespace

static int run(int argc, char** argv) {
  unsigned long long v[5];
  if (argc != 6) {
    std::fprintf(stderr, "usage: tierd-pmucal TYPE|none NODE LOADS PERIOD LDLAT\n");
    return 2;
  }
  const bool none = std::strcmp(argv[1], "none") == 0;
  v[0] = 0;
  for (int i = none ? 2 : 1; i < argc; ++i) {
    auto n = tierd::sys::parseU64(argv[i], "tierd-pmucal");
    if (!n) {
      std::fprintf(stderr, "tierd-pmucal: %s\n", n.error().describe().c_str());
      return 2;
    }
    v[i - 1] = n.value();
  }
  const unsigned long long type = v[0], node = v[1], loads = v[2], period = v[3], ldlat = v[4];
  if (node >= 64 || loads == 0 || period == 0 || ldlat > 0xffff) {
    std::fprintf(stderr, "tierd-pmucal: NODE < 64, LOADS > 0, PERIOD > 0, LDLAT < 65536\n");
    return 2;
  }
  const size_t bytes = loads * kLine;
  auto* buf = static_cast<char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (buf == MAP_FAILED) return fail("mmap buffer");
  unsigned long mask = 1UL << node;
  if (syscall(SYS_mbind, buf, bytes, kMpolBind, &mask, 64UL, 0UL) != 0) return fail("mbind");
  for (size_t i = 0; i < bytes; i += kLine)
    buf[i] = static_cast<char>(i / kLine);

  const auto loopLo = reinterpret_cast<uint64_t>(&readLines);
  const uint64_t loopHi = loopLo + kLoopBytes;
  const auto bufLo = reinterpret_cast<uint64_t>(buf);
  const uint64_t bufHi = bufLo + bytes;
  if (none) {
    const uint64_t sum = readLines(buf, loads);
    std::printf("buffer=%#llx-%#llx loop=%#llx-%#llx sum=%llu\n",
                static_cast<unsigned long long>(bufLo), static_cast<unsigned long long>(bufHi),
                static_cast<unsigned long long>(loopLo), static_cast<unsigned long long>(loopHi),
                static_cast<unsigned long long>(sum));
    return 0;
  }

  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = static_cast<unsigned>(type);
  attr.config = 0x01cd;
  attr.config1 = ldlat;
  attr.precise_ip = 2;
  attr.sample_period = period;
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT |
                     PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL));
  if (fd < 0) return fail("perf_event_open");
  const size_t mapLen = (kRingPages + 1) * kPage;
  void* ring = mmap(nullptr, mapLen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring == MAP_FAILED) return fail("mmap perf ring");

  if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) return fail("PERF_EVENT_IOC_ENABLE");
  const uint64_t sum = readLines(buf, loads);
  if (ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) != 0) return fail("PERF_EVENT_IOC_DISABLE");

  auto* meta = static_cast<perf_event_mmap_page*>(ring);
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  const auto* data = static_cast<const char*>(ring) + kPage;
  const size_t dataLen = kRingPages * kPage;
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  uint64_t records = 0, lost = 0, throttled = 0, inBuf = 0, physMatch = 0, physChecked = 0,
           nodeSrc = 0, weightMin = UINT64_MAX;
  bool ipInLoop = true;
  std::set<uint64_t> ips;
  // Records never wrap here: the ring holds every record of one run (kRingPages).
  for (uint64_t off = 0; off + sizeof(perf_event_header) <= head && head <= dataLen;) {
    perf_event_header h;
    std::memcpy(&h, data + off, sizeof h);
    if (h.size == 0) break;
    if (h.type == PERF_RECORD_SAMPLE) {
      uint64_t f[7];  // ip, pid|tid, addr, weight, data_src, phys_addr
      std::memcpy(f, data + off + sizeof h, 6 * sizeof(uint64_t));
      const uint64_t ip = f[0], addr = f[2], weight = f[3], src = f[4], phys = f[5];
      ++records;
      ips.insert(ip);
      if (ip < loopLo || ip >= loopHi) ipInLoop = false;
      if (addr >= bufLo && addr < bufLo + bytes) ++inBuf;
      const uint64_t want = pagemap >= 0 ? physOf(pagemap, addr) : 0;
      if (want != 0) {
        ++physChecked;
        if (want == phys) ++physMatch;
      }
      perf_mem_data_src ds{};
      ds.val = src;
      if (ds.mem_lvl_num == PERF_MEM_LVLNUM_RAM || ds.mem_lvl_num == PERF_MEM_LVLNUM_CXL) ++nodeSrc;
      if (weight < weightMin) weightMin = weight;
    } else if (h.type == PERF_RECORD_LOST) {
      uint64_t f[2];
      std::memcpy(f, data + off + sizeof h, sizeof f);
      lost += f[1];
    } else if (h.type == PERF_RECORD_THROTTLE) {
      ++throttled;
    }
    off += h.size;
  }
  std::printf(
      "records=%llu expected=%llu lost=%llu throttled=%llu ips=%zu ip_in_loop=%d "
      "addr_in_buffer=%llu phys_match=%llu phys_checked=%llu node_src=%llu weight_min=%llu "
      "sum=%llu\n",
      static_cast<unsigned long long>(records), loads / period,
      static_cast<unsigned long long>(lost), static_cast<unsigned long long>(throttled), ips.size(),
      ipInLoop ? 1 : 0, static_cast<unsigned long long>(inBuf),
      static_cast<unsigned long long>(physMatch), static_cast<unsigned long long>(physChecked),
      static_cast<unsigned long long>(nodeSrc),
      static_cast<unsigned long long>(records ? weightMin : 0),
      static_cast<unsigned long long>(sum));
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tierd-pmucal: %s\n", e.what());
    return 1;
  }
}

#include "tierd/daemon/TickBench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "policy/ConfigCompiler.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Tuning.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::daemon {
namespace {

constexpr uint64_t kHuge = 2 * kMiB;  // the bench's VMAs are whole, aligned 2 MiB pages
constexpr uint64_t kTouchStep = 4096;

// What the child says once its memory is mapped and touched: the first VMA's address, or the
// errno and the step that failed.
struct Ready {
  uint64_t base = 0;
  int err = 0;
  int step = 0;  // 1 reserve, 2 map a VMA, 3 madvise(MADV_HUGEPAGE)
};

const char* stepName(int step) {
  switch (step) {
    case 1:
      return "reserving the address range (mmap PROT_NONE)";
    case 2:
      return "mapping a VMA (mmap MAP_FIXED; vm.max_map_count or memory)";
    case 3:
      return "madvise(MADV_HUGEPAGE)";
    default:
      return "starting";
  }
}

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// In the child: maps [addr, addr+len) read-write over the reservation, advises THP and writes
// every base page. 0, or the failing step (errno set).
int mapTouched(uint64_t addr, uint64_t len) {
  void* p = ::mmap(reinterpret_cast<void*>(addr), len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return 2;
  if (::madvise(p, len, MADV_HUGEPAGE) != 0) return 3;
  volatile char* bytes = static_cast<volatile char*>(p);
  for (uint64_t off = 0; off < len; off += kTouchStep)
    bytes[off] = 1;
  return 0;
}

// The child's whole life. Only async-signal-safe calls (the parent may have threads): the layout
// is computed by the parent. Layout from `base` (2 MiB aligned, one 2 MiB gap after the
// reservation's start): VMA 0, a 2 MiB PROT_NONE gap, VMA 1, gap, ..., the toggled 2 MiB slot
// (PROT_NONE until the first change), gap. Each command byte on `cmdFd` maps the slot (touched,
// THP) or returns it to PROT_NONE; the answer is an int errno on `ackFd`. EOF: exit.
[[noreturn]] void childMain(const uint64_t* lengths, size_t n, uint64_t reserveLen, int cmdFd,
                            int ackFd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before the death signal was set
  Ready ready;
  void* r =
      ::mmap(nullptr, reserveLen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) {
    ready.err = errno;
    ready.step = 1;
    (void)writeAll(ackFd, &ready, sizeof ready);
    ::_exit(1);
  }
  const uint64_t base = ((reinterpret_cast<uint64_t>(r) + kHuge - 1) & ~(kHuge - 1)) + kHuge;
  uint64_t a = base;
  for (size_t i = 0; i < n; ++i) {
    if (int step = mapTouched(a, lengths[i])) {
      ready.err = errno;
      ready.step = step;
      (void)writeAll(ackFd, &ready, sizeof ready);
      ::_exit(1);
    }
    a += lengths[i] + kHuge;
  }
  const uint64_t slot = a;
  ready.base = base;
  if (!writeAll(ackFd, &ready, sizeof ready)) ::_exit(1);
  bool mapped = false;
  char cmd = 0;
  while (readAll(cmdFd, &cmd, 1)) {
    int err = 0;
    if (!mapped) {
      err = mapTouched(slot, kHuge) == 0 ? 0 : errno;
    } else if (::mmap(reinterpret_cast<void*>(slot), kHuge, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                      0) == MAP_FAILED) {
      err = errno;
    }
    if (err == 0) mapped = !mapped;
    if (!writeAll(ackFd, &err, sizeof err)) break;
  }
  ::_exit(0);
}

// The synthetic target process: forked, killed (SIGKILL) and reaped by the destructor.
class SyntheticChild {
 public:
  SyntheticChild() = default;
  SyntheticChild(const SyntheticChild&) = delete;
  SyntheticChild& operator=(const SyntheticChild&) = delete;
  ~SyntheticChild() { stop(); }

  // Forks the child with VMAs of `lengths` and waits until they are touched.
  Status start(const std::vector<uint64_t>& lengths) {
    int cmd[2], ack[2];
    if (::pipe2(cmd, O_CLOEXEC) != 0) return Error::fromErrno("pipe2", "bench tick");
    if (::pipe2(ack, O_CLOEXEC) != 0) {
      ::close(cmd[0]);
      ::close(cmd[1]);
      return Error::fromErrno("pipe2", "bench tick");
    }
    uint64_t total = 0;
    for (uint64_t l : lengths)
      total += l;
    const uint64_t reserveLen = total + (lengths.size() + 4) * kHuge;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(cmd[1]);
      ::close(ack[0]);
      childMain(lengths.data(), lengths.size(), reserveLen, cmd[0], ack[1], parent);
    }
    const int forkErr = errno;
    ::close(cmd[0]);
    ::close(ack[1]);
    cmd_ = cmd[1];
    ack_ = ack[0];
    if (pid_ < 0) return Error::sys(forkErr, "fork", "bench tick");
    Ready ready;
    if (!readAll(ack_, &ready, sizeof ready))
      return Error::env(
          "the synthetic process exited before its memory was mapped (killed by "
          "the OOM killer?)",
          "bench tick: pid " + std::to_string(pid_));
    if (ready.err != 0 || ready.base == 0)
      return Error::sys(ready.err,
                        std::string("the synthetic process failed ") + stepName(ready.step),
                        "bench tick: pid " + std::to_string(pid_));
    base_ = ready.base;
    return Ok{};
  }

  // Maps the spare 2 MiB slot, or unmaps it (back to PROT_NONE): one VMA more or fewer.
  Status toggle() {
    const char c = 't';
    int err = 0;
    if (!writeAll(cmd_, &c, 1) || !readAll(ack_, &err, sizeof err))
      return Error::env("the synthetic process exited", "bench tick: pid " + std::to_string(pid_));
    if (err != 0)
      return Error::sys(err, "the synthetic process failed to change its mappings",
                        "bench tick: pid " + std::to_string(pid_));
    return Ok{};
  }

  pid_t pid() const { return pid_; }
  uint64_t base() const { return base_; }

 private:
  void stop() {
    if (cmd_ >= 0) ::close(cmd_);
    if (ack_ >= 0) ::close(ack_);
    cmd_ = ack_ = -1;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int cmd_ = -1;
  int ack_ = -1;
  uint64_t base_ = 0;
};

// The VMA lengths: sizeBytes / 2 MiB huge pages spread over `vmas` VMAs, the first ones one
// page larger.
std::vector<uint64_t> vmaLengths(uint64_t sizeBytes, uint64_t vmas) {
  const uint64_t pages = sizeBytes / kHuge;
  std::vector<uint64_t> out(vmas, (pages / vmas) * kHuge);
  for (uint64_t i = 0; i < pages % vmas; ++i)
    out[i] += kHuge;
  return out;
}

// The engine's config: the child by pid, dry run, everything else at the daemon's defaults
// (daemon.interval 1 s, daemon.full_locate_interval 10 s).
Result<std::shared_ptr<const policy::CompiledConfig>> benchConfig(pid_t child) {
  const std::string text =
      "[daemon]\ndry_run = true\n\n[[workload]]\nname = \"bench-tick\"\npids = [" +
      std::to_string(child) + "]\n";
  policy::CompileOutcome compiled = policy::compileConfigText(text, "tierctl-bench-tick.toml");
  if (!compiled.ok()) return compiled.toError().within("bench tick config");
  return std::make_shared<const policy::CompiledConfig>(std::move(*compiled.config));
}

Result<TickSample> measureTick(Engine& engine, TickKind kind, std::vector<std::string>& problems) {
  static const std::atomic<bool> kNoStop{false};
  TickSample s;
  s.kind = kind;
  const uint64_t now = monotonicNs();
  const uint64_t cpu = threadCpuNs();
  auto report =
      engine.tick(now, static_cast<int64_t>(now + engine.config().daemon.intervalNs), &kNoStop);
  s.cpuNs = threadCpuNs() - cpu;
  s.wallNs = monotonicNs() - now;
  if (!report) return report.error().within("bench tick");
  s.fullRead = report->locatesReused == 0;
  s.phases = report->cpu;
  for (std::string& p : report->problems)
    if (std::find(problems.begin(), problems.end(), p) == problems.end())
      problems.push_back(std::move(p));
  return s;
}

// The VMA and byte figures of the report, from one smaps read of the child.
Status countVmas(pid_t pid, uint64_t base, const std::vector<uint64_t>& lengths,
                 const topology::Topology& topo, TickBenchReport& out) {
  auto smaps = sys::readSmaps(sys::SysRoot::live(), pid);
  if (!smaps) return smaps.error().within("bench tick");
  out.vmasTotal = smaps->size();
  const uint64_t basePage = topo.caps.basePageSize ? topo.caps.basePageSize : 4096;
  const uint64_t pmd = topo.caps.pmdPageSize ? topo.caps.pmdPageSize : kHuge;
  for (const policy::Mapping& m : managedMappings(smaps.value(), basePage, pmd)) {
    ++out.managedVmas;
    out.managedBytes += m.end - m.start;
  }
  uint64_t a = base;
  for (uint64_t len : lengths) {
    auto it = std::find_if(smaps->begin(), smaps->end(), [&](const sys::SmapsVma& v) {
      return v.start == a && v.end == a + len;
    });
    if (it != smaps->end()) {
      ++out.vmasFound;
      out.thpBytes += it->anonHugePages;
    }
    out.benchBytes += len;
    a += len + kHuge;
  }
  return Ok{};
}

Status validate(const TickBenchOptions& o) {
  if (o.vmas == 0) return Error::input("--vmas must be at least 1", "bench tick");
  if (o.ticks < 1) return Error::input("--ticks must be at least 1", "bench tick");
  if (o.sizeBytes / kHuge < o.vmas)
    return Error::input("--size " + formatBytes(o.sizeBytes) +
                            " holds fewer 2 MiB pages than the " + std::to_string(o.vmas) +
                            " VMAs asked for (at least " + formatBytes(o.vmas * kHuge) + ")",
                        "bench tick");
  return Ok{};
}

}  // namespace

const char* tickKindName(TickKind kind) {
  switch (kind) {
    case TickKind::First:
      return "first";
    case TickKind::Unchanged:
      return "unchanged";
    case TickKind::Changed:
      return "changed";
  }
  return "?";
}

double medianMs(std::vector<uint64_t> ns) {
  if (ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  const size_t n = ns.size();
  const double mid =
      n % 2 ? static_cast<double>(ns[n / 2])
            : (static_cast<double>(ns[n / 2 - 1]) + static_cast<double>(ns[n / 2])) / 2;
  return mid / 1e6;
}

Result<TickBenchReport> runTickBench(const TickBenchOptions& options) {
  if (Status v = validate(options); !v) return v.error();
  const std::vector<uint64_t> lengths = vmaLengths(options.sizeBytes, options.vmas);
  SyntheticChild child;
  if (Status s = child.start(lengths); !s) return s.error();
  auto config = benchConfig(child.pid());
  if (!config) return config.error();
  const sys::SysRoot root = sys::SysRoot::live();
  SourceFactory noSampling =
      [](pid_t, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
    return std::unique_ptr<telemetry::HotnessSource>();  // not sampled (Engine::startSource)
  };
  auto reads = std::make_shared<migrate::ProcReads>();  // as the daemon: the migrator plans on them
  Engine engine(root,
                std::make_unique<migrate::MovePagesMigrator>(
                    migratorConfig(*config.value()), migrate::makeLinuxPageSystem(root), reads),
                noSampling, ::getpid(), config.value(), MappingsReader{}, NumaMapsReader{},
                MappingsReader{}, reads);

  TickBenchReport out;
  out.childPid = child.pid();
  out.vmasPlanned = options.vmas;
  auto first = measureTick(engine, TickKind::First, out.problems);
  if (!first) return first.error();
  out.ticks.push_back(first.value());
  auto topo = topology::readTopology(root, {});
  if (!topo) return topo.error().within("bench tick: topology");
  if (Status s = countVmas(child.pid(), child.base(), lengths, topo.value(), out); !s)
    return s.error();
  for (int i = 0; i < options.ticks; ++i) {
    auto same = measureTick(engine, TickKind::Unchanged, out.problems);
    if (!same) return same.error();
    out.ticks.push_back(same.value());
    if (Status s = child.toggle(); !s) return s.error();
    auto changed = measureTick(engine, TickKind::Changed, out.problems);
    if (!changed) return changed.error();
    out.ticks.push_back(changed.value());
  }
  engine.shutdown();
  return out;
}

}  // namespace tierd::daemon

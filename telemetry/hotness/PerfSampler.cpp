#include "telemetry/hotness/PerfSampler.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "telemetry/hotness/PerfRing.h"
#include "tierd/core/Clock.h"
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

EventChoice pageFaultEvent() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_PAGE_FAULTS;
  return {"software/page-faults", attr,
          "software event: every Nth page fault with its faulting address (first touch, "
          "NUMA hint faults); works without a PMU"};
}

Status checkFdBudget(uint64_t needed, uint64_t softLimit, uint64_t inUse) {
  constexpr uint64_t kSpare = 64;
  if (needed + inUse + kSpare <= softLimit) return Ok{};
  return Error::env("perf sampling needs " + std::to_string(needed) +
                        " file descriptors (CPUs x events) but RLIMIT_NOFILE is " +
                        std::to_string(softLimit) + " with " + std::to_string(inUse) +
                        " in use: raise it to at least " + std::to_string(needed + inUse + kSpare) +
                        " (ulimit -n, or LimitNOFILE= in the systemd unit)",
                    "RLIMIT_NOFILE");
}

uint64_t alignPeriod(uint64_t period, uint64_t multiple) {
  if (multiple <= 1) return period;
  return std::max(multiple, period - period % multiple);
}

bool servedByCache(uint64_t dataSrc) {
  // PERF_MEM_LVLNUM_L2_MHB (L2 miss handling buffer, linux/perf_event.h since 6.9; the build
  // host's uapi headers may predate it)
  constexpr unsigned kLvlNumL2Mhb = 0x05;
  perf_mem_data_src src{};
  src.val = dataSrc;
  switch (src.mem_lvl_num) {
    case PERF_MEM_LVLNUM_L1:
    case PERF_MEM_LVLNUM_L2:
    case PERF_MEM_LVLNUM_L3:
    case PERF_MEM_LVLNUM_L4:
    case kLvlNumL2Mhb:
    case PERF_MEM_LVLNUM_ANY_CACHE:
    case PERF_MEM_LVLNUM_LFB:
      return true;
    default:
      break;
  }
  return (src.mem_lvl & PERF_MEM_LVL_HIT) != 0 &&
         (src.mem_lvl & (PERF_MEM_LVL_L1 | PERF_MEM_LVL_LFB | PERF_MEM_LVL_L2 | PERF_MEM_LVL_L3)) !=
             0;
}

std::string explainRefusal(const EventChoice& event, const perf_event_attr& attr) {
  std::string why;
  if (event.periodMultiple > 1 && !attr.freq && attr.sample_period % event.periodMultiple != 0)
    why += "sample_period " + std::to_string(attr.sample_period) + " is not a multiple of " +
           std::to_string(event.periodMultiple) + " (the driver refuses its low bits); ";
  if (event.filterKernelInUser && (attr.exclude_kernel || attr.exclude_hv))
    why += "exclude_kernel/exclude_hv without the PMU's swfilt format bit; ";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "the attr: type=%u config=%#llx config1=%#llx config2=%#llx sample_period=%llu "
                "sample_type=%#llx precise_ip=%u exclude_kernel=%u exclude_hv=%u use_clockid=%u "
                "inherit=%u",
                attr.type, static_cast<unsigned long long>(attr.config),
                static_cast<unsigned long long>(attr.config1),
                static_cast<unsigned long long>(attr.config2),
                static_cast<unsigned long long>(attr.sample_period),
                static_cast<unsigned long long>(attr.sample_type), unsigned(attr.precise_ip),
                unsigned(attr.exclude_kernel), unsigned(attr.exclude_hv),
                unsigned(attr.use_clockid), unsigned(attr.inherit));
  return why + buf;
}

uint64_t adaptPeriod(uint64_t period, double measured, double budget, uint64_t minPeriod,
                     uint64_t maxPeriod) {
  uint64_t next = period;
  if (measured > budget)
    next = period > maxPeriod / 2 ? maxPeriod : period * 2;
  else if (measured < budget / 4)
    next = period / 2;
  return std::clamp(next, minPeriod, maxPeriod);
}

PerfSampler::PerfSampler(PerfSamplerConfig config, PerfEventOpener& opener,
                         const sys::SysRoot& root)
    : config_(std::move(config)),
      opener_(opener),
      root_(root),
      filter_(root, config_.mapsRefreshNs) {
  uint64_t driverMin = 1;
  for (const auto& ev : config_.events) {
    periodMultiple_ = std::lcm(periodMultiple_, std::max<uint64_t>(1, ev.periodMultiple));
    driverMin = std::max(driverMin, ev.minPeriod);
  }
  // Every period the kernel sees, first and adapted, keeps the drivers' alignment and minimum
  // (the minimum rounded up to the alignment).
  config_.minPeriod = std::max(config_.minPeriod, driverMin);
  config_.minPeriod = std::max(
      periodMultiple_, alignPeriod(config_.minPeriod + periodMultiple_ - 1, periodMultiple_));
  config_.maxPeriod = std::max(config_.minPeriod, alignPeriod(config_.maxPeriod, periodMultiple_));
  config_.period = std::clamp(alignPeriod(config_.period, periodMultiple_), config_.minPeriod,
                              config_.maxPeriod);
}

std::string PerfSampler::state() const {
  char overhead[32];
  std::snprintf(overhead, sizeof overhead, "%.1f%%", overhead_ * 100);
  std::string out = "period=" + std::to_string(config_.period) + " overhead=" + overhead;
  for (size_t i = 0; i < refused_.size(); ++i)
    out += (i == 0 ? " dropped=" : ",") + refused_[i];
  if (std::any_of(config_.events.begin(), config_.events.end(),
                  [](const EventChoice& e) { return e.groupLeader.has_value(); }))
    out += " leader=mem-loads-aux";
  return out;
}

size_t PerfSampler::fdCount() const {
  size_t n = 0;
  for (const auto& r : rings_)
    n += r.leaderFd >= 0 ? 2 : 1;
  return n;
}

PerfSampler::~PerfSampler() {
  stop();
}

Result<int> PerfSampler::openOne(const EventChoice& event, perf_event_attr attr, pid_t pid, int cpu,
                                 int groupFd, unsigned long flags) {
  attr.sample_type = config_.sampleType;
  auto fd = opener_.open(attr, pid, cpu, groupFd, flags);
  if (fd || fd.error().code != EINVAL) return fd;
  // EINVAL does not say which field: try without the optional sample fields, one at a time, and
  // keep the first sample type that opens. If none does, the refusal was of something else.
  struct Drop {
    uint64_t bit, replacement;
    const char* name;
  };
  uint64_t st = config_.sampleType;
  std::vector<std::string> dropped;
  for (Drop d : {Drop{PERF_SAMPLE_PHYS_ADDR, 0, "PHYS_ADDR"},
                 Drop{PERF_SAMPLE_WEIGHT_STRUCT, PERF_SAMPLE_WEIGHT, "WEIGHT_STRUCT"}}) {
    if ((st & d.bit) == 0) continue;
    st = (st & ~d.bit) | d.replacement;
    dropped.push_back(d.name);
    attr.sample_type = st;
    auto again = opener_.open(attr, pid, cpu, groupFd, flags);
    if (again) {
      config_.sampleType = st;
      refused_.insert(refused_.end(), dropped.begin(), dropped.end());
      return again;
    }
    if (again.error().code != EINVAL) return again;
  }
  attr.sample_type = config_.sampleType;
  std::string tried;
  for (const auto& d : dropped)
    tried += (tried.empty() ? " (also without " : ", ") + d;
  if (!tried.empty()) tried += ")";
  return Error{
      EINVAL, ErrorKind::Unsupported,
      "perf_event_open refused the event with EINVAL" + tried + ": " + explainRefusal(event, attr),
      "cpu " + std::to_string(cpu)};
}

Result<int> PerfSampler::openLeader(const EventChoice& event, const perf_event_attr& member,
                                    pid_t pid, int cpu, unsigned long flags) {
  perf_event_attr leader = *event.groupLeader;
  leader.size = sizeof leader;
  leader.disabled = 1;
  leader.sample_period = 0;  // counts; the member samples
  leader.sample_type = 0;
  // The member's privilege filter and clock: perf_event_open() (kernel/events/core.c) refuses a
  // member whose clock differs from its leader's with EINVAL.
  leader.exclude_kernel = member.exclude_kernel;
  leader.exclude_hv = member.exclude_hv;
  leader.use_clockid = member.use_clockid;
  leader.clockid = member.clockid;
  leader.inherit = member.inherit;
  auto fd = opener_.open(leader, pid, cpu, -1, flags);
  if (!fd) return fd.error().within("its group leader mem-loads-aux");
  return fd;
}

Status PerfSampler::enableRing(const Ring& r) {
  if (auto s = opener_.enable(r.fd, true); !s) return s;
  if (r.leaderFd >= 0) return opener_.enable(r.leaderFd, true);
  return Ok{};
}

void PerfSampler::closeRing(const Ring& r) {
  (void)opener_.enable(r.fd, false);
  opener_.unmap(r.base, r.length);
  opener_.close(r.fd);
  if (r.leaderFd >= 0) opener_.close(r.leaderFd);
}

Status PerfSampler::openOn(const std::vector<std::pair<pid_t, int>>& targets, bool cgroupMode) {
  const size_t pageSize = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t length = (1 + config_.ringPages) * pageSize;
  for (const auto& ev : config_.events) {
    perf_event_attr attr = ev.attr;
    attr.size = sizeof attr;
    attr.sample_period = config_.period;
    attr.disabled = 1;
    attr.exclude_kernel = ev.filterKernelInUser ? 0 : 1;
    attr.exclude_hv = ev.filterKernelInUser ? 0 : 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.wakeup_events = 0;  // we poll; never woken
    // The kernel refuses to mmap an inherit event opened with cpu -1 (perf_mmap: EINVAL), so pid
    // mode opens each thread without inherit (and drain() picks up new threads); cgroup mode sees
    // every thread anyway.
    attr.inherit = 0;
    const unsigned long flags = cgroupMode ? PERF_FLAG_PID_CGROUP : 0;
    for (const auto& [who, cpu] : targets) {
      int leaderFd = -1;
      if (ev.groupLeader) {
        auto leader = openLeader(ev, attr, who, cpu, flags);
        if (!leader) {
          if (!cgroupMode && leader.error().code == ESRCH) continue;  // thread exited meanwhile
          return leader.error().within(ev.name);
        }
        leaderFd = leader.value();
      }
      auto fd = openOne(ev, attr, who, cpu, leaderFd, flags);
      if (!fd) {
        if (leaderFd >= 0) opener_.close(leaderFd);
        if (!cgroupMode && fd.error().code == ESRCH) continue;  // thread exited meanwhile
        if (fd.error().code == ENODATA && isLoadLatency(attr))
          return Error{ENODATA, ErrorKind::Unsupported,
                       "perf_event_open refused load latency (ENODATA): this PMU wants the "
                       "mem-loads-aux event as group leader, but its sysfs events/mem-loads-aux "
                       "was not found",
                       ev.name};
        return fd.error().within(ev.name);
      }
      auto base = opener_.map(fd.value(), length);
      if (!base) {
        opener_.close(fd.value());
        if (leaderFd >= 0) opener_.close(leaderFd);
        return base.error();
      }
      rings_.push_back({fd.value(), base.value(), length, cgroupMode ? -1 : who, leaderFd,
                        ev.filterKernelInUser, ev.dropCacheServed});
      if (!cgroupMode) openedTids_.insert(who);
      if (started_) {  // a thread found after start: enable at once
        if (auto s = enableRing(rings_.back()); !s) return s;
      }
    }
  }
  return Ok{};
}

void PerfSampler::openNewThreads(uint64_t nowNs) {
  if (!config_.cgroupPath.empty() || nowNs - lastTaskScanNs_ < config_.mapsRefreshNs) return;
  lastTaskScanNs_ = nowNs;
  const std::string dir = "/proc/" + std::to_string(config_.pid) + "/task";
  auto tasks = root_.list(dir);
  if (!tasks) return;  // the process has gone: its rings just stay empty
  std::vector<std::pair<pid_t, int>> fresh;
  std::set<pid_t> live;
  for (const auto& t : tasks.value()) {
    auto tid = sys::parseU64(t, root_.path(dir));
    if (!tid) continue;
    live.insert(static_cast<pid_t>(tid.value()));
    if (!openedTids_.count(static_cast<pid_t>(tid.value())))
      fresh.push_back({static_cast<pid_t>(tid.value()), -1});
  }
  for (pid_t tid : openedTids_)
    if (!live.count(tid)) exitedTids_.insert(tid);
  if (!fresh.empty() && !openOn(fresh, false)) ++threadOpenFailures_;
}

void PerfSampler::closeExitedThreads() {
  if (exitedTids_.empty()) return;
  std::vector<Ring> keep;
  for (const Ring& r : rings_) {
    if (r.tid >= 0 && exitedTids_.count(r.tid)) {
      closeRing(r);
    } else {
      keep.push_back(r);
    }
  }
  rings_ = std::move(keep);
  for (pid_t tid : exitedTids_)
    openedTids_.erase(tid);
  exitedTids_.clear();
}

Status PerfSampler::start() {
  if (started_) return Ok{};
  if (config_.events.empty()) return Error{0, ErrorKind::Internal, "no events", name()};
  if ((config_.sampleType & ~kSupportedSampleType) != 0 ||
      (config_.sampleType & PERF_SAMPLE_ADDR) == 0)
    return Error{0, ErrorKind::Internal, "sample_type must include ADDR and only decodable bits",
                 name()};
  if (config_.ringPages == 0 || (config_.ringPages & (config_.ringPages - 1)) != 0)
    return Error::input(
        "ring pages must be a power of two, got " + std::to_string(config_.ringPages), name());
  const bool cgroupMode = !config_.cgroupPath.empty();
  // Where to open: (pid-or-cgroup-fd, cpu) pairs.
  std::vector<std::pair<pid_t, int>> targets;
  int cgroupFd = -1;
  if (cgroupMode) {
    std::vector<int> cpus = config_.cpus;
    if (cpus.empty()) {
      auto online = root_.readAttr("/sys/devices/system/cpu/online");
      if (!online) return online.error();
      auto ids = sys::parseIdList(online.value(), root_.path("/sys/devices/system/cpu/online"));
      if (!ids) return ids.error();
      cpus.assign(ids->begin(), ids->end());
    }
    const std::string p = root_.path(config_.cgroupPath);
    cgroupFd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroupFd < 0) return Error::fromErrno("cannot open the perf_event cgroup", p);
    for (int c : cpus)
      targets.push_back({cgroupFd, c});
  } else {
    auto tasks = root_.list("/proc/" + std::to_string(config_.pid) + "/task");
    if (!tasks) return tasks.error();
    for (const auto& t : tasks.value()) {
      auto tid = sys::parseU64(t, root_.path("/proc/" + std::to_string(config_.pid) + "/task"));
      if (tid) targets.push_back({static_cast<pid_t>(tid.value()), -1});
    }
  }
  lastTaskScanNs_ = monotonicNs();
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  uint64_t inUse = 0;
  if (auto fds = sys::SysRoot::live().list("/proc/self/fd"); fds) inUse = fds->size();
  uint64_t perTarget = 0;
  for (const auto& ev : config_.events)
    perTarget += ev.groupLeader ? 2 : 1;
  if (auto s = checkFdBudget(targets.size() * perTarget, rl.rlim_cur, inUse); !s) {
    if (cgroupFd >= 0) ::close(cgroupFd);
    return s;
  }
  Status status = openOn(targets, cgroupMode);
  if (cgroupFd >= 0) ::close(cgroupFd);
  if (status && rings_.empty())
    status =
        Error::env("no thread of pid " + std::to_string(config_.pid) + " could be opened", name());
  if (!status) {
    stop();
    return status;
  }
  for (const auto& r : rings_) {
    if (auto s = enableRing(r); !s) {
      stop();
      return s;
    }
  }
  started_ = true;
  lastWallNs_ = monotonicNs();
  return Ok{};
}

Status PerfSampler::collect() {
  const uint64_t cpu0 = threadCpuNs();
  if (started_) openNewThreads(monotonicNs());
  std::vector<PerfSample> raw;
  RingCounts counts;
  Status firstError = Ok{};
  uint64_t dropped = 0;
  for (const auto& r : rings_) {
    PerfRing ring(r.base, r.length, config_.sampleType);
    const size_t before = raw.size();
    auto s = ring.drain(raw, counts);
    if (!s && firstError) firstError = s;
    // What the driver could not filter: kernel samples where it cannot exclude them, and (IBS)
    // what a cache served, which is no memory access.
    if (r.userOnly || r.memoryOnly) {
      auto kept = std::remove_if(raw.begin() + static_cast<std::ptrdiff_t>(before), raw.end(),
                                 [&r](const PerfSample& p) {
                                   return (r.userOnly && !isUserMode(p.misc)) ||
                                          (r.memoryOnly && servedByCache(p.dataSrc));
                                 });
      dropped += static_cast<uint64_t>(raw.end() - kept);
      raw.erase(kept, raw.end());
    }
  }
  stats_.discarded += dropped;
  closeExitedThreads();  // after their last records were read
  stats_.lost += counts.lost;
  lostSinceAdapt_ += counts.lost;
  stats_.throttled += counts.throttled;
  const uint64_t now = monotonicNs();
  for (const auto& p : raw) {
    const bool keep = p.addr != 0 && (!config_.filterMappings ||
                                      filter_.contains(static_cast<pid_t>(p.pid), p.addr, now));
    if (!keep) {
      ++stats_.discarded;
      continue;
    }
    AccessSample a;
    a.timeNs = p.timeNs;
    a.pid = static_cast<pid_t>(p.pid);
    a.tid = static_cast<pid_t>(p.tid);
    a.cpu = (config_.sampleType & PERF_SAMPLE_CPU) ? static_cast<int>(p.cpu) : -1;
    a.vaddr = p.addr;
    a.weight = p.weight == 0 ? 1 : p.weight;
    a.dataSource = p.dataSrc;
    pending_.push_back(a);
  }
  std::stable_sort(
      pending_.begin(), pending_.end(),
      [](const AccessSample& x, const AccessSample& y) { return x.timeNs < y.timeNs; });
  cpuNsSinceAdapt_ += threadCpuNs() - cpu0;
  return firstError;
}

Result<std::vector<AccessSample>> PerfSampler::drain(uint64_t untilNs) {
  const Status firstError = collect();
  const uint64_t cpu0 = threadCpuNs();
  const uint64_t now = monotonicNs();
  std::vector<AccessSample> out;
  while (!pending_.empty() && pending_.front().timeNs <= untilNs) {
    out.push_back(pending_.front());
    pending_.pop_front();
  }
  stats_.samples += out.size();
  // CPU budget: measured over at least one second of wall time, collect() calls included.
  cpuNsSinceAdapt_ += threadCpuNs() - cpu0;
  const uint64_t wall = now - lastWallNs_;
  if (started_ && wall >= 1000000000u) {
    overhead_ = static_cast<double>(cpuNsSinceAdapt_) / static_cast<double>(wall);
    // Lost records mean we cannot keep up with the rate either: treat as over budget.
    const double pressure =
        lostSinceAdapt_ > 0 ? std::max(overhead_, 2 * config_.cpuBudget) : overhead_;
    const uint64_t next = alignPeriod(adaptPeriod(config_.period, pressure, config_.cpuBudget,
                                                  config_.minPeriod, config_.maxPeriod),
                                      periodMultiple_);
    lostSinceAdapt_ = 0;
    if (next > config_.period) ++stats_.budgetBackoffs;
    if (next != config_.period) {
      for (const auto& r : rings_)
        (void)opener_.setPeriod(r.fd, next);  // a vanished fd shows up in the next drain
      config_.period = next;
    }
    cpuNsSinceAdapt_ = 0;
    lastWallNs_ = now;
  }
  if (!firstError) return firstError.error();
  return out;
}

void PerfSampler::stop() {
  for (const auto& r : rings_)
    closeRing(r);
  rings_.clear();
  openedTids_.clear();
  exitedTids_.clear();
  started_ = false;
}

}  // namespace tierd::telemetry

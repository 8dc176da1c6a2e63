#include "telemetry/hotness/PerfSampler.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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
      filter_(root, config_.mapsRefreshNs) {}

PerfSampler::~PerfSampler() {
  stop();
}

Result<int> PerfSampler::openOne(perf_event_attr attr, pid_t pid, int cpu, unsigned long flags) {
  for (;;) {
    attr.sample_type = config_.sampleType;
    auto fd = opener_.open(attr, pid, cpu, -1, flags);
    if (fd || fd.error().code != EINVAL) return fd;
    // Not every PMU/kernel accepts every field: drop the optional ones one at a time.
    uint64_t& st = config_.sampleType;
    if (st & PERF_SAMPLE_PHYS_ADDR) {
      st &= ~uint64_t{PERF_SAMPLE_PHYS_ADDR};
    } else if (st & PERF_SAMPLE_WEIGHT_STRUCT) {
      st = (st & ~uint64_t{PERF_SAMPLE_WEIGHT_STRUCT}) | PERF_SAMPLE_WEIGHT;
    } else {
      return fd;
    }
  }
}

Status PerfSampler::openOn(const std::vector<std::pair<pid_t, int>>& targets, bool cgroupMode) {
  const size_t pageSize = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t length = (1 + config_.ringPages) * pageSize;
  for (const auto& ev : config_.events) {
    perf_event_attr attr = ev.attr;
    attr.size = sizeof attr;
    attr.sample_period = config_.period;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.wakeup_events = 0;  // we poll; never woken
    // The kernel refuses to mmap an inherit event opened with cpu -1 (perf_mmap: EINVAL), so pid
    // mode opens each thread without inherit (and drain() picks up new threads); cgroup mode sees
    // every thread anyway.
    attr.inherit = 0;
    for (const auto& [who, cpu] : targets) {
      auto fd = openOne(attr, who, cpu, cgroupMode ? PERF_FLAG_PID_CGROUP : 0);
      if (!fd) {
        if (!cgroupMode && fd.error().code == ESRCH) continue;  // thread exited meanwhile
        return fd.error().within(ev.name);
      }
      auto base = opener_.map(fd.value(), length);
      if (!base) {
        opener_.close(fd.value());
        return base.error();
      }
      rings_.push_back({fd.value(), base.value(), length, cgroupMode ? -1 : who});
      if (!cgroupMode) openedTids_.insert(who);
      if (started_) {  // a thread found after start: enable at once
        if (auto s = opener_.enable(fd.value(), true); !s) return s;
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
      (void)opener_.enable(r.fd, false);
      opener_.unmap(r.base, r.length);
      opener_.close(r.fd);
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
  if (auto s = checkFdBudget(targets.size() * config_.events.size(), rl.rlim_cur, inUse); !s) {
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
    if (auto s = opener_.enable(r.fd, true); !s) {
      stop();
      return s;
    }
  }
  started_ = true;
  lastWallNs_ = monotonicNs();
  return Ok{};
}

Result<std::vector<AccessSample>> PerfSampler::drain(uint64_t untilNs) {
  const uint64_t cpu0 = threadCpuNs();
  if (started_) openNewThreads(monotonicNs());
  std::vector<PerfSample> raw;
  RingCounts counts;
  Status firstError = Ok{};
  for (const auto& r : rings_) {
    PerfRing ring(r.base, r.length, config_.sampleType);
    auto s = ring.drain(raw, counts);
    if (!s && firstError) firstError = s;
  }
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
  std::vector<AccessSample> out;
  while (!pending_.empty() && pending_.front().timeNs <= untilNs) {
    out.push_back(pending_.front());
    pending_.pop_front();
  }
  stats_.samples += out.size();
  // CPU budget: measured over at least one second of wall time.
  cpuNsSinceAdapt_ += threadCpuNs() - cpu0;
  const uint64_t wall = now - lastWallNs_;
  if (started_ && wall >= 1000000000u) {
    overhead_ = static_cast<double>(cpuNsSinceAdapt_) / static_cast<double>(wall);
    // Lost records mean we cannot keep up with the rate either: treat as over budget.
    const double pressure =
        lostSinceAdapt_ > 0 ? std::max(overhead_, 2 * config_.cpuBudget) : overhead_;
    const uint64_t next = adaptPeriod(config_.period, pressure, config_.cpuBudget,
                                      config_.minPeriod, config_.maxPeriod);
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
  for (const auto& r : rings_) {
    (void)opener_.enable(r.fd, false);
    opener_.unmap(r.base, r.length);
    opener_.close(r.fd);
  }
  rings_.clear();
  openedTids_.clear();
  exitedTids_.clear();
  started_ = false;
}

}  // namespace tierd::telemetry

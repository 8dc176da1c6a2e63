#include "telemetry/hotness/DamonSource.h"

#include <cstdlib>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include <limits>

#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/HeatRegions.h"
#include "tierd/core/Clock.h"
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

namespace {

const std::string kAdmin = "/sys/kernel/mm/damon/admin";
const std::string kKdamonds = kAdmin + "/kdamonds";

std::string joinLines(const std::string& s) {
  std::istringstream in(s);
  std::string w, out;
  while (in >> w)
    out += (out.empty() ? "" : ",") + w;
  return out;
}

}  // namespace

Status DamonFs::makeDir(const std::string& abs) {
  return Error{0, ErrorKind::Unsupported, "no mkdir on this DamonFs", abs};
}

Status DamonFs::removeDir(const std::string& abs) {
  return Error{0, ErrorKind::Unsupported, "no rmdir on this DamonFs", abs};
}

Result<std::string> DamonFs::readAvailable(const std::string& abs) {
  return Error{0, ErrorKind::Unsupported, "no non-blocking read on this DamonFs", abs};
}

Status SysRootDamonFs::makeDir(const std::string& abs) {
  const std::string p = root_.path(abs);
  if (::mkdir(p.c_str(), 0755) != 0) return Error::fromErrno("cannot mkdir", p);
  return Ok{};
}

Status SysRootDamonFs::removeDir(const std::string& abs) {
  const std::string p = root_.path(abs);
  if (::rmdir(p.c_str()) != 0) return Error::fromErrno("cannot rmdir", p);
  return Ok{};
}

Result<std::string> SysRootDamonFs::readAvailable(const std::string& abs) {
  const std::string p = root_.path(abs);
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error::fromErrno("cannot open", p);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) {
      Error e = Error::fromErrno("cannot read", p);
      ::close(fd);
      return e;
    }
    break;  // 0: end of file; EAGAIN: nothing more now
  }
  ::close(fd);
  return out;
}

DamonProbe probeDamon(DamonFs& fs, VaddrEvidence evidence) {
  DamonProbe p;
  if (!fs.exists(kKdamonds)) {
    p.why =
        "no DAMON sysfs interface (" + kKdamonds + " missing: kernel without CONFIG_DAMON_SYSFS)";
    return p;
  }
  p.present = true;
  auto nr = fs.readAttr(kKdamonds + "/nr_kdamonds");
  auto n =
      nr ? sys::parseU64(nr.value(), kKdamonds + "/nr_kdamonds") : Result<uint64_t>(nr.error());
  if (!n) {
    p.why = "cannot read nr_kdamonds: " + n.error().describe();
    return p;
  }
  p.nrKdamonds = static_cast<int>(n.value());
  for (int i = 0; i < p.nrKdamonds; ++i) {
    DamonProbe::Kdamond k;
    k.id = i;
    const std::string d = kKdamonds + "/" + std::to_string(i);
    k.state = fs.readAttr(d + "/state").valueOr("?");
    k.pid = fs.readAttr(d + "/pid").valueOr("?");
    k.operations = fs.readAttr(d + "/contexts/0/operations").valueOr("");
    k.availOperations = joinLines(fs.readAttr(d + "/contexts/0/avail_operations").valueOr(""));
    p.kdamonds.push_back(k);
  }
  if (!p.kdamonds.empty() && !p.kdamonds.front().availOperations.empty()) {
    const std::string ops = "," + p.kdamonds.front().availOperations + ",";
    p.vaddr = ops.find(",vaddr,") != std::string::npos ? "yes" : "no";
    p.vaddrEvidence = "avail_operations of kdamond 0: " + p.kdamonds.front().availOperations;
  } else if (evidence == VaddrEvidence::Skip) {
    p.vaddrEvidence = "not looked for (no kdamond to read avail_operations from)";
  } else if (auto syms = fs.readAttr("/proc/kallsyms"); !syms) {
    p.vaddrEvidence = "no kdamond to read avail_operations from, and " + syms.error().describe();
  } else {
    const std::string& text = syms.value();
    const std::string sym = " damon_va_check_accesses";
    bool found = false;
    for (size_t at = text.find(sym); at != std::string::npos && !found;
         at = text.find(sym, at + 1)) {
      const size_t end = at + sym.size();
      found = end == text.size() || text[end] == '\n' || text[end] == '\t';
    }
    p.vaddr = found ? "yes" : "no";
    p.vaddrEvidence = std::string("/proc/kallsyms ") + (found ? "has" : "lacks") +
                      " damon_va_check_accesses (mm/damon/vaddr.c, CONFIG_DAMON_VADDR)";
  }
  if (std::string holder = exclusiveHolder(fs); !holder.empty()) {
    p.why = exclusiveHolderWhy(holder);
  } else if (p.nrKdamonds == 0) {
    p.usable = true;
    p.why =
        "no kdamond exists: tierd may create its own (nr_kdamonds 0 -> N, all at once: "
        "sampling.damon_max_processes in the daemon, one per sampled process; 1 for tierctl)";
  } else {
    const auto& k = p.kdamonds.front();
    p.why = "DAMON busy: kdamond " + std::to_string(k.id) + " is not ours (state " + k.state +
            ", operations " + (k.operations.empty() ? "none" : k.operations) + ", available " +
            (k.availOperations.empty() ? "unknown" : k.availOperations) +
            "); tierd never writes nr_kdamonds while another kdamond exists, since that would "
            "remove it";
  }
  return p;
}

Status validateDamonRanges(const std::vector<DamonRange>& ranges, uint64_t pageSize) {
  uint64_t prevEnd = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    std::ostringstream name;
    name << "DAMON range " << i << " 0x" << std::hex << r.start << "-0x" << r.end;
    if (r.end <= r.start)
      return Error::input("empty or inverted range (size 0 crashes kdamond)", name.str());
    if (r.start % pageSize || r.end % pageSize)
      return Error::input("range not aligned to the " + std::to_string(pageSize) + "-byte page",
                          name.str());
    if (i > 0 && r.start < prevEnd)
      return Error::input("ranges must be sorted and must not overlap", name.str());
    prevEnd = r.end;
  }
  return Ok{};
}

double damonAccessEstimate(uint64_t nrAccesses, uint64_t checks) {
  if (nrAccesses == 0 || checks == 0) return 0;
  const double n = static_cast<double>(checks);
  const double p = std::min(static_cast<double>(nrAccesses), n - 0.5) / n;
  return -std::log1p(-p) * n;
}

DamonSource::DamonSource(DamonConfig config, DamonFs& fs)
    : config_(std::move(config)), fs_(fs), sampleUs_(config_.sampleUs), aggrUs_(config_.aggrUs) {
  DamonPoolConfig one;
  one.capacity = 1;
  ownedPool_ = std::make_unique<DamonPool>(fs_, one);
  pool_ = ownedPool_.get();
}

DamonSource::DamonSource(DamonConfig config, DamonFs& fs, DamonPool& pool)
    : config_(std::move(config)),
      fs_(fs),
      pool_(&pool),
      sampleUs_(config_.sampleUs),
      aggrUs_(config_.aggrUs) {}

DamonSource::~DamonSource() {
  stop();
}

std::string DamonSource::kd(const std::string& rel) const {
  return DamonPool::kdamondDir(slot_) + "/" + rel;
}

Status DamonSource::checkOwnership() {
  if (Status s = pool_->checkOwnership(); !s) return s;
  if (!kdamondPid_.empty()) {
    auto state = fs_.readAttr(kd("state"));
    auto pid = fs_.readAttr(kd("pid"));
    if (state && state.value() == "on" && pid && pid.value() != kdamondPid_)
      return Error::env("kdamond " + std::to_string(slot_) + " now runs as pid " + pid.value() +
                            ", not our " + kdamondPid_ + "; not touching it",
                        kd("pid"));
  }
  return Ok{};
}

Status DamonSource::w(const std::string& rel, const std::string& value) {
  if (!created_) return Error{0, ErrorKind::Internal, "write before our kdamond exists", rel};
  if (auto s = checkOwnership(); !s) return s;
  return fs_.write(kd(rel), value);
}

Status DamonSource::start() {
  if (created_) return Ok{};
  if (config_.pid <= 0) return Error::input("no pid to monitor", "damon");
  const uint64_t pageSize = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (auto s = validateDamonRanges(config_.ranges, pageSize); !s) return s;
  if (config_.sampleUs == 0 || config_.aggrUs < config_.sampleUs ||
      config_.updateUs < config_.aggrUs || config_.minRegions < 3 ||
      config_.maxRegions < config_.minRegions)
    return Error::input("need 0 < sample_us <= aggr_us <= update_us and 3 <= min <= max regions",
                        "damon monitoring_attrs");
  if (config_.adaptiveSampling &&
      (config_.minSampleUs == 0 || config_.minSampleUs > config_.maxSampleUs ||
       !(config_.accessRatioLow >= 0 && config_.accessRatioLow < config_.accessRatioHigh &&
         config_.accessRatioHigh <= 1)))
    return Error::input(
        "adaptive sampling needs 0 < min_sample_us <= max_sample_us and 0 <= low < high <= 1",
        "damon monitoring_attrs");
  auto slot = pool_->acquire();
  if (!slot) return slot.error();
  slot_ = slot.value();
  created_ = true;
  auto fail = [&](Error e) -> Status {
    stop();
    return e;
  };
  // On record before it is configured, so that what a crash leaves half-written is ours by it.
  DamonSlotRecord note{-1, "vaddr", config_.pid};
  if (auto s = pool_->noteSlot(slot_, note); !s) return fail(s.error());
  if (auto s = w("contexts/nr_contexts", "1"); !s) return fail(s.error());
  auto avail = fs_.readAttr(kd("contexts/0/avail_operations"));
  if (!avail) return fail(avail.error());
  std::istringstream ops(avail.value());
  std::string op;
  bool vaddr = false;
  while (ops >> op)
    vaddr = vaddr || op == "vaddr";
  if (!vaddr)
    return fail(
        Error{0, ErrorKind::Unsupported,
              "kernel DAMON lacks vaddr operations (available: " + joinLines(avail.value()) + ")",
              kd("contexts/0/avail_operations")});
  const std::string ma = "contexts/0/monitoring_attrs/";
  const std::pair<std::string, std::string> attrs[] = {
      {"contexts/0/operations", "vaddr"},
      {ma + "intervals/sample_us", std::to_string(config_.sampleUs)},
      {ma + "intervals/aggr_us", std::to_string(config_.aggrUs)},
      {ma + "intervals/update_us", std::to_string(config_.updateUs)},
      {ma + "nr_regions/min", std::to_string(config_.minRegions)},
      {ma + "nr_regions/max", std::to_string(config_.maxRegions)},
      {"contexts/0/targets/nr_targets", "1"},
      {"contexts/0/targets/0/pid_target", std::to_string(config_.pid)},
  };
  for (const auto& [rel, value] : attrs)
    if (auto s = w(rel, value); !s) return fail(s.error());
  // The nr_contexts write above made the context anew, its pause N (mm/damon/sysfs.c), so a
  // kdamond directory another source of ours paused and stopped does not start paused.
  pauseSupported_ = fs_.exists(kd("contexts/0/pause"));
  paused_ = false;
  pauseProblem_.clear();
  // Kernel intervals auto-tuning (6.15+) in place of ours where it exists.
  const std::string goal = ma + "intervals/intervals_goal/";
  if (config_.adaptiveSampling && fs_.exists(kd(goal + "access_bp"))) {
    const double mid = (config_.accessRatioLow + config_.accessRatioHigh) / 2;
    const std::pair<std::string, std::string> tuning[] = {
        {goal + "access_bp", std::to_string(std::llround(mid * 10000))},
        {goal + "aggrs", std::to_string(kIntervalsGoalAggrs)},
        {goal + "min_sample_us", std::to_string(config_.minSampleUs)},
        {goal + "max_sample_us", std::to_string(config_.maxSampleUs)},
    };
    for (const auto& [rel, value] : tuning)
      if (auto s = w(rel, value); !s) return fail(s.error());
    kernelTuning_ = true;
  }
  if (!config_.ranges.empty()) {
    const std::string rg = "contexts/0/targets/0/regions/";
    if (auto s = w(rg + "nr_regions", std::to_string(config_.ranges.size())); !s)
      return fail(s.error());
    for (size_t i = 0; i < config_.ranges.size(); ++i) {
      if (auto s = w(rg + std::to_string(i) + "/start", std::to_string(config_.ranges[i].start));
          !s)
        return fail(s.error());
      if (auto s = w(rg + std::to_string(i) + "/end", std::to_string(config_.ranges[i].end)); !s)
        return fail(s.error());
    }
  }
  // The tracepoint path needs no scheme; where tracing cannot work, the tried regions do.
  tracefs_.clear();
  readWhy_.clear();
  if (config_.read == DamonReadPath::Tracepoint) {
    if (auto mount = DamonTraceInstance::probe(fs_); mount)
      tracefs_ = mount.value();
    else
      readWhy_ = "tracepoint unavailable: " + mount.error().describe();
  }
  if (tracefs_.empty())
    if (auto s = writeStatScheme(); !s) return fail(s.error());
  if (auto s = w("state", "on"); !s) return fail(s.error());
  auto pid = fs_.readAttr(kd("pid"));
  if (!pid) return fail(pid.error());
  kdamondPid_ = pid.value();
  // Its thread's pid identifies it as ours to a tierd that reclaims after a crash.
  auto thread = tierd::parseU64InRange(kdamondPid_, 1, std::numeric_limits<pid_t>::max(), "pid");
  if (!thread) return fail(Error::env("kdamond pid '" + kdamondPid_ + "' is not a pid", kd("pid")));
  note.kdamondPid = static_cast<pid_t>(*thread);
  if (auto s = pool_->noteSlot(slot_, note); !s) return fail(s.error());
  if (!tracefs_.empty())
    if (auto s = openTraceOrFallBack(); !s) return fail(s.error());
  return Ok{};
}

Status DamonSource::writeStatScheme() {
  // A `stat` scheme matching every region: the max values default to 0, set them all.
  const std::string sc = "contexts/0/schemes/";
  if (auto s = w(sc + "nr_schemes", "1"); !s) return s;
  if (!fs_.exists(kd(sc + "0/tried_regions")))
    return Error{0, ErrorKind::Unsupported,
                 "DAMON has no schemes tried_regions (kernel older than 6.2)",
                 kd(sc + "0/tried_regions")};
  const std::string ap = sc + "0/access_pattern/";
  const std::pair<std::string, std::string> scheme[] = {
      {sc + "0/action", "stat"},
      {ap + "sz/min", "0"},
      {ap + "sz/max", std::to_string(UINT64_MAX)},
      {ap + "nr_accesses/min", "0"},
      // Not aggr/sample: adaptive sampling changes that, and a region above max would vanish.
      {ap + "nr_accesses/max", std::to_string(UINT32_MAX)},
      {ap + "age/min", "0"},
      {ap + "age/max", std::to_string(UINT32_MAX)},
  };
  for (const auto& [rel, value] : scheme)
    if (auto s = w(rel, value); !s) return s;
  return Ok{};
}

Status DamonSource::openTraceOrFallBack() {
  auto pid = tierd::parseU64InRange(kdamondPid_, 1, std::numeric_limits<pid_t>::max(), "pid");
  Status s =
      pid ? Status(Ok{})
          : Status(Error::input("kdamond pid '" + kdamondPid_ + "' is not a pid", kd("pid")));
  if (s) {
    tracePid_ = static_cast<pid_t>(*pid);
    s = trace_.open(tracefs_, tracePid_, damonTraceBufferKb(config_.maxRegions));
  }
  if (s) return Ok{};
  readWhy_ = "tracepoint unavailable: " + s.error().describe();
  tracefs_.clear();
  if (Status scheme = writeStatScheme(); !scheme) return scheme;
  return w("state", "commit");
}

Result<std::vector<AccessSample>> DamonSource::drain(uint64_t untilNs) {
  if (!created_ || targetGone_) return std::vector<AccessSample>{};
  if (paused_)  // a resume that failed before: sample again (state() says why it failed)
    if (auto s = setPaused(false); !s) return s.error();
  if (budget() <= 0) return snapshot(untilNs);
  const std::function<uint64_t()>& clock =
      config_.threadCpuNs ? config_.threadCpuNs : std::function<uint64_t()>(tierd::threadCpuNs);
  const uint64_t cpu0 = clock();
  auto out = snapshot(untilNs);
  enforceBudget(untilNs, clock() - cpu0);
  return out;
}

void DamonSource::enforceBudget(uint64_t untilNs, uint64_t ownCpuNs) {
  if (!created_ || targetGone_ || !budgetStopped_.empty()) return;
  if (budgetWindowOpen_ && untilNs - budgetWindowStartNs_ < config_.budgetWindowNs) {
    budgetOwnNs_ += ownCpuNs;
    return;
  }
  const std::string stat = "/proc/" + kdamondPid_ + "/stat";
  auto text = fs_.readAttr(stat);
  auto ticks = text ? sys::parseStatCpuTicks(text.value(), stat) : Result<uint64_t>(text.error());
  if (!ticks) {  // measured again from the next drain on
    budgetProblem_ = "kdamond CPU unreadable: " + ticks.error().describe();
    budgetWindowOpen_ = false;
    return;
  }
  budgetProblem_.clear();
  if (budgetWindowOpen_) {
    const double hz = static_cast<double>(std::max<uint64_t>(1, config_.clockTicksPerSecond));
    const uint64_t kdamondTicks =
        ticks.value() >= budgetTicksAtStart_ ? ticks.value() - budgetTicksAtStart_ : 0;
    const double cpuNs =
        static_cast<double>(kdamondTicks) / hz * 1e9 + static_cast<double>(budgetOwnNs_ + ownCpuNs);
    cpuRatio_ = cpuNs / static_cast<double>(untilNs - budgetWindowStartNs_);
    overAtBound_ = false;
    contrastHeld_ = false;
    if (cpuRatio_ > budget() && settledBackOffWouldBlur())
      contrastHeld_ = true;
    else if (cpuRatio_ > budget())
      overAtBound_ = !backOff() && budgetStopped_.empty();
    else if (cpuRatio_ < budget() / 4)
      relax();
  }
  budgetWindowOpen_ = true;
  budgetWindowStartNs_ = untilNs;
  budgetTicksAtStart_ = ticks.value();
  budgetOwnNs_ = 0;
}

double DamonSource::budget() const {
  if (!settledBudgetApplies()) return config_.cpuBudget;
  return config_.cpuBudget > 0 ? std::min(config_.cpuBudget, config_.settledCpuBudget)
                               : config_.settledCpuBudget;
}

void DamonSource::setSettled(bool settled) {
  if (settled == settled_) return;
  settled_ = settled;
  if (config_.settledCpuBudget <= 0) return;
  budgetWindowOpen_ = false;  // a window measured under the other budget says nothing here
  if (settled || unsettledSampleUs_ == 0) return;
  const uint64_t sample = unsettledSampleUs_, aggr = unsettledAggrUs_;
  unsettledSampleUs_ = unsettledAggrUs_ = 0;
  if (!created_ || targetGone_ || !budgetStopped_.empty()) return;
  // The intervals from before the settled back-off, at once (see the header).
  const std::string iv = "contexts/0/monitoring_attrs/intervals/";
  std::vector<IntervalWrite> files;
  if (kernelTuning_) {
    files.push_back({iv + "intervals_goal/min_sample_us", config_.minSampleUs,
                     std::max(config_.minSampleUs, floorUs_)});
    files.push_back({iv + "sample_us", sample, sampleUs_});
    files.push_back({iv + "aggr_us", aggr, aggrUs_});
  } else {
    files.push_back({iv + "sample_us", sample, sampleUs_});
  }
  if (!commitIntervals(files)) return;
  sampleUs_ = sample;
  if (kernelTuning_) aggrUs_ = aggr;
  floorUs_ = 0;
  overAtBound_ = false;
}

uint64_t DamonSource::pauseLeadNs() const {
  // A stopped source or a gone target still answers its lead: pausing it does nothing, and the
  // engine does not warn that DAMON cannot pause.
  if (!pauseSupported_) return 0;
  return 3 * std::max<uint64_t>(1, aggrUs_) * 1000;
}

Status DamonSource::setPaused(bool paused) {
  if (!created_ || targetGone_) {
    paused_ = false;
    return Ok{};
  }
  if (paused == paused_) return Ok{};
  if (paused && !pauseSupported_)
    return Error{0, ErrorKind::Unsupported, "kernel DAMON cannot pause a context",
                 kd("contexts/0/pause")};
  if (paused && kernelTuning_) readTunedIntervals();  // the commit re-reads both intervals
  Status s = w("contexts/0/pause", paused ? "Y" : "N");
  if (s) s = w("state", "commit");
  if (!s) {
    pauseProblem_ = std::string(paused ? "pause" : "resume") + " failed: " + s.error().describe();
    if (paused) (void)w("contexts/0/pause", "N");  // the file as the kernel still runs it
    return s.error();
  }
  paused_ = paused;
  if (paused) ++pauses_;
  pauseProblem_.clear();
  return Ok{};
}

bool DamonSource::settledBackOffWouldBlur() const {
  if (!settledBudgetApplies() || accessRatio_ < kSettledMaxAccessRatio) return false;
  // Over the unsettled budget too: that one is a limit, not a saving, and is held as always.
  return config_.cpuBudget <= 0 || cpuRatio_ <= config_.cpuBudget;
}

uint64_t DamonSource::baseFloorUs() const {
  return config_.adaptiveSampling ? config_.minSampleUs : config_.sampleUs;
}

uint64_t DamonSource::sampleBoundUs() const {
  // The kernel's tuning scales aggr_us with sample_us, so only its own bound applies there.
  const uint64_t bound =
      kernelTuning_ ? config_.maxSampleUs : std::min(config_.maxSampleUs, config_.aggrUs / 5);
  return std::max(bound, baseFloorUs());
}

bool DamonSource::backOff() {
  const uint64_t bound = sampleBoundUs();
  const uint64_t current = std::max(sampleUs_, floorUs_);
  if (current >= bound) return false;
  const uint64_t next = std::min(bound, current * 2);
  if (settledBudgetApplies() && unsettledSampleUs_ == 0) {
    unsettledSampleUs_ = sampleUs_;  // what setSettled(false) writes back
    unsettledAggrUs_ = aggrUs_;
  }
  if (!commitFloor(next)) return false;
  floorUs_ = next;
  ++stats_.budgetBackoffs;
  return true;
}

void DamonSource::relax() {
  if (floorUs_ == 0) return;
  const uint64_t base = baseFloorUs();
  const uint64_t next = floorUs_ / 2 <= base ? 0 : floorUs_ / 2;
  // Where tierd tunes, adaptive sampling lowers sample_us to the new floor when the access ratio
  // asks for it; elsewhere the floor is the interval (or the kernel's lower bound) itself.
  if ((kernelTuning_ || !config_.adaptiveSampling) && !commitFloor(std::max(base, next))) return;
  floorUs_ = next;
}

bool DamonSource::commitFloor(uint64_t us) {
  const std::string iv = "contexts/0/monitoring_attrs/intervals/";
  std::vector<IntervalWrite> files;
  if (kernelTuning_) {
    // The commit re-reads sample_us and aggr_us too, and 7.3's damon_valid_intervals_goal()
    // (mm/damon/core.c) refuses sample_us below min_sample_us with -EINVAL: a raised floor
    // moves the tuned pair up with it, keeping the tuned number of checks per aggregation.
    const uint64_t sample = std::max<uint64_t>(1, sampleUs_);
    if (us > sample) {
      const uint64_t aggr = std::max(aggrUs_, sample);
      const uint64_t scaled = aggr / sample * us + aggr % sample * us / sample;
      files.push_back({iv + "aggr_us", scaled, aggr});
      files.push_back({iv + "sample_us", us, sample});
    }
    files.push_back(
        {iv + "intervals_goal/min_sample_us", us, std::max(config_.minSampleUs, floorUs_)});
  } else {
    files.push_back({iv + "sample_us", us, sampleUs_});
  }
  if (!commitIntervals(files)) return false;
  if (!kernelTuning_ || us > sampleUs_) {
    if (kernelTuning_) aggrUs_ = files.front().value;
    sampleUs_ = us;
  }
  return true;
}

bool DamonSource::commitIntervals(const std::vector<IntervalWrite>& files) {
  Status s = Ok{};
  for (const IntervalWrite& f : files)
    if (s) s = w(f.attr, std::to_string(f.value));
  if (s) s = w("state", "commit");
  if (s) return true;
  // Keep what the kernel still uses; put the files back to match it.
  budgetStopped_ = "CPU budget not enforced: " + s.error().describe();
  for (const IntervalWrite& f : files)
    (void)w(f.attr, std::to_string(f.before));
  return false;
}

Result<std::vector<std::vector<DamonRegionCount>>> DamonSource::triedRegions() {
  std::vector<std::vector<DamonRegionCount>> aggregations;
  // 6.12 sometimes returns from update_schemes_tried_regions before any region was collected
  // (runs of empty snapshots in the rig): ask again, up to kTriedRegionsAttempts times.
  const std::string tr = kd("contexts/0/schemes/0/tried_regions");
  std::vector<uint64_t> ids;
  for (int attempt = 0; attempt < kTriedRegionsAttempts && ids.empty(); ++attempt) {
    if (auto s = w("state", "update_schemes_tried_regions"); !s) {
      // The process may have exited between the read and the write.
      auto again = fs_.readAttr(kd("state"));
      if (again && again.value() != "on") {
        targetGone_ = true;
        return aggregations;
      }
      return s.error();
    }
    auto entries = fs_.list(tr);
    if (!entries) return entries.error();
    for (const auto& e : entries.value())
      if (auto id = sys::parseU64(e, tr); id) ids.push_back(id.value());
    if (ids.empty()) ++emptySnapshots_;
  }
  std::sort(ids.begin(), ids.end());
  std::vector<DamonRegionCount>& regions = aggregations.emplace_back();
  for (uint64_t id : ids) {
    const std::string d = tr + "/" + std::to_string(id);
    uint64_t v[3];
    const char* names[3] = {"start", "end", "nr_accesses"};
    for (int i = 0; i < 3; ++i) {
      auto text = fs_.readAttr(d + "/" + names[i]);
      if (!text) return text.error();
      auto n = sys::parseU64(text.value(), d + "/" + names[i]);
      if (!n) return n.error();
      v[i] = n.value();
    }
    regions.push_back({v[0], v[1], v[2]});
  }
  if (regions.empty()) aggregations.clear();
  return aggregations;
}

Result<std::vector<std::vector<DamonRegionCount>>> DamonSource::traceRegions() {
  auto text = trace_.readPipe();
  if (!text) return text.error();
  auto events = parseDamonAggregated(text.value(), &traceMalformed_);
  // An aggregation the last read saw the beginning of continues in this one.
  if (!traceTail_.empty()) events.insert(events.begin(), traceTail_.begin(), traceTail_.end());
  auto split = splitAggregations(events, tracePid_, 0);
  traceTail_ = std::move(split.tail);
  if (split.complete.empty()) ++emptySnapshots_;
  return std::move(split.complete);
}

namespace {

/// Aggregations into samples: one per 2 MiB chunk an accessed region overlaps, weighted by the
/// mean over the aggregations (weights: see the DamonSource.h file comment), in address order.
/// Adds each valid region's bytes to `totalBytes` and its accessed share to `seenBytes` (summed
/// over the aggregations); counts inverted regions in `discarded`.
std::vector<AccessSample> regionSamples(const std::vector<std::vector<DamonRegionCount>>& aggrs,
                                        uint64_t checks, pid_t pid, uint64_t untilNs,
                                        double& seenBytes, double& totalBytes,
                                        uint64_t& discarded) {
  struct Chunk {
    uint64_t vaddr;  // the lowest address a region covers in the chunk (inside the mapping)
    double weight;   // summed over the aggregations
  };
  std::map<uint64_t, Chunk> chunks;  // by 2 MiB chunk start
  for (const std::vector<DamonRegionCount>& regions : aggrs) {
    for (const DamonRegionCount& r : regions) {
      if (r.end <= r.start) {
        ++discarded;
        continue;
      }
      totalBytes += static_cast<double>(r.end - r.start);
      seenBytes += static_cast<double>(r.end - r.start) *
                   static_cast<double>(std::min(r.nrAccesses, checks)) /
                   static_cast<double>(checks);
      if (r.nrAccesses == 0) continue;  // not accessed in this aggregation interval
      const double estimate = damonAccessEstimate(r.nrAccesses, checks);
      // DAMON's region boundaries are page multiples, not 2 MiB ones: a chunk straddled by two
      // regions gets each one's estimate in proportion to the part it covers (weighting every
      // overlap fully counted such chunks twice).
      for (uint64_t c = r.start & ~(kHeatRegionBytes - 1); c < r.end; c += kHeatRegionBytes) {
        const uint64_t from = std::max(c, r.start);
        const uint64_t to = std::min(c + kHeatRegionBytes, r.end);
        const uint64_t units = (to - from + kDamonWeightUnit - 1) / kDamonWeightUnit;
        auto [it, fresh] = chunks.try_emplace(c, Chunk{from, 0.0});
        if (!fresh) it->second.vaddr = std::min(it->second.vaddr, from);
        it->second.weight += estimate * static_cast<double>(units);
      }
    }
  }
  std::vector<AccessSample> out;
  out.reserve(chunks.size());
  const double n = static_cast<double>(std::max<size_t>(1, aggrs.size()));
  for (const auto& [c, chunk] : chunks) {
    AccessSample a;
    a.timeNs = untilNs;
    a.pid = pid;
    a.tid = pid;
    a.vaddr = chunk.vaddr;
    a.weight = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(chunk.weight / n)));
    out.push_back(a);
  }
  return out;
}

}  // namespace

Result<std::vector<AccessSample>> DamonSource::snapshot(uint64_t untilNs) {
  std::vector<AccessSample> out;
  if (!created_ || targetGone_) return out;
  if (lastSnapshotNs_ != 0 && untilNs - lastSnapshotNs_ < config_.snapshotNs) return out;
  lastSnapshotNs_ = untilNs;
  auto state = fs_.readAttr(kd("state"));
  if (!state) return state.error();
  if (state.value() != "on") {  // kdamond stops by itself when its target process exits
    targetGone_ = true;
    trace_.close();
    return out;
  }
  auto regions = trace_.isOpen() ? traceRegions() : triedRegions();
  if (!regions) return regions.error();
  if (targetGone_) return out;
  if (kernelTuning_) readTunedIntervals();
  const uint64_t checks = std::max<uint64_t>(1, aggrUs_ / std::max<uint64_t>(1, sampleUs_));
  double seenBytes = 0, totalBytes = 0;
  out = regionSamples(regions.value(), checks, config_.pid, untilNs, seenBytes, totalBytes,
                      stats_.discarded);
  stats_.samples += out.size();
  lastAggregations_ = regions.value().size();
  lastRegions_ = regions.value().empty() ? 0 : regions.value().back().size();
  if (regions.value().empty()) {  // still nothing: try again at the next drain, not a period later
    lastSnapshotNs_ = 0;
    // Two drains in a row without regions: the kdamond does not finish its aggregations at this
    // sample interval (under TCG a kdamond at 500 us answered nothing 41 times out of 44):
    // sample half as often, as for an idle target.
    if (++emptyDrainsInARow_ >= 2) {
      emptyDrainsInARow_ = 0;
      retune(0.0);
    }
    return out;
  }
  emptyDrainsInARow_ = 0;
  ++snapshots_;
  if (totalBytes > 0) {
    accessRatio_ = seenBytes / totalBytes;
    retune(accessRatio_);
  }
  return out;
}

void DamonSource::readTunedIntervals() {
  if (!tuningStopped_.empty()) return;
  const std::string iv = "contexts/0/monitoring_attrs/intervals/";
  Status s = w("state", "update_tuned_intervals");
  uint64_t v[2] = {sampleUs_, aggrUs_};
  const char* names[2] = {"sample_us", "aggr_us"};
  for (int i = 0; s && i < 2; ++i) {
    auto text = fs_.readAttr(kd(iv + names[i]));
    if (!text) {
      s = text.error();
      break;
    }
    auto n = sys::parseU64(text.value(), kd(iv + names[i]));
    if (!n) {
      s = n.error();
      break;
    }
    v[i] = n.value();
  }
  if (!s) {
    tuningStopped_ = "tuned intervals unreadable: " + s.error().describe();
    return;
  }
  if (v[0] == 0 || v[1] < v[0]) {
    tuningStopped_ = "tuned intervals inconsistent: sample_us=" + std::to_string(v[0]) +
                     " aggr_us=" + std::to_string(v[1]);
    return;
  }
  sampleUs_ = v[0];
  aggrUs_ = v[1];
}

void DamonSource::retune(double ratio) {
  if (!config_.adaptiveSampling || kernelTuning_ || !tuningStopped_.empty()) return;
  const uint64_t maxUs =
      std::max<uint64_t>(config_.minSampleUs, std::min(config_.maxSampleUs, config_.aggrUs / 5));
  uint64_t next = sampleUs_;
  if (ratio > config_.accessRatioHigh)
    next = std::max({config_.minSampleUs, floorUs_, sampleUs_ / 2});  // never under the budget's
  else if (ratio < config_.accessRatioLow)
    next = std::min(maxUs, sampleUs_ * 2);
  if (next == sampleUs_) return;
  const std::string attr = "contexts/0/monitoring_attrs/intervals/sample_us";
  Status s = w(attr, std::to_string(next));
  if (s) s = w("state", "commit");
  if (!s) {
    // Keep sampling at the interval the kernel still uses; put the file back to match it.
    tuningStopped_ = "adaptive sampling off: " + s.error().describe();
    (void)w(attr, std::to_string(sampleUs_));
    return;
  }
  sampleUs_ = next;
  ++retunes_;
}

std::string DamonSource::state() const {
  char buf[128];
  if (accessRatio_ < 0)
    std::snprintf(buf, sizeof buf, "sample_us=%llu", static_cast<unsigned long long>(sampleUs_));
  else
    std::snprintf(
        buf, sizeof buf, "sample_us=%llu access=%.0f%% regions=%llu snapshots=%llu empty=%llu",
        static_cast<unsigned long long>(sampleUs_), 100.0 * accessRatio_,
        static_cast<unsigned long long>(lastRegions_), static_cast<unsigned long long>(snapshots_),
        static_cast<unsigned long long>(emptySnapshots_));
  std::string out = buf;
  if (config_.read == DamonReadPath::Tracepoint) {
    out += trace_.isOpen() ? " read=tracepoint aggregations=" + std::to_string(lastAggregations_)
                           : std::string(" read=tried_regions");
    if (traceMalformed_) out += " malformed=" + std::to_string(traceMalformed_);
    if (!readWhy_.empty()) out += " (" + readWhy_ + ")";
  }
  if (config_.adaptiveSampling) out += kernelTuning_ ? " tuning=kernel" : " tuning=tierd";
  if (!tuningStopped_.empty()) out += " (" + tuningStopped_ + ")";
  if (settledBudgetApplies()) out += " settled";
  if (pauses_) out += " pauses=" + std::to_string(pauses_);
  if (paused_) out += " paused";
  if (!pauseProblem_.empty()) out += " (" + pauseProblem_ + ")";
  if (budget() <= 0 && floorUs_ == 0) return out;
  if (cpuRatio_ >= 0) {
    std::snprintf(buf, sizeof buf, " cpu=%.1f%% of %.1f%%", 100.0 * cpuRatio_, 100.0 * budget());
    out += buf;
  }
  if (floorUs_) out += " sample_us>=" + std::to_string(floorUs_);
  if (stats_.budgetBackoffs) out += " backoffs=" + std::to_string(stats_.budgetBackoffs);
  if (overAtBound_)
    out += " (over the CPU budget at the longest sample interval, " +
           std::to_string(sampleBoundUs()) + " us)";
  if (contrastHeld_)
    out += " (settled back-off held: access at or above " +
           std::to_string(std::lround(100 * kSettledMaxAccessRatio)) + "%)";
  if (!budgetProblem_.empty()) out += " (" + budgetProblem_ + ")";
  if (!budgetStopped_.empty()) out += " (" + budgetStopped_ + ")";
  return out;
}

void DamonSource::stop() {
  paused_ = false;  // turning the kdamond off ends a pause too
  trace_.close();
  traceTail_.clear();
  if (!created_) return;
  // Ours still (count and kdamond pid): the pool turns it off, and the last one removes them all.
  pool_->release(slot_, checkOwnership().ok());
  created_ = false;
  slot_ = -1;
  kdamondPid_.clear();
  budgetWindowOpen_ = false;
}

std::optional<pid_t> DamonSource::kdamondPid() const {
  if (kdamondPid_.empty() || targetGone_) return std::nullopt;
  auto v = tierd::parseU64InRange(kdamondPid_, 1, std::numeric_limits<pid_t>::max(), "pid");
  if (!v) return std::nullopt;
  return static_cast<pid_t>(*v);
}

}  // namespace tierd::telemetry

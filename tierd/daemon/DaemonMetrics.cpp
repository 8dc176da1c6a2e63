#include "tierd/daemon/DaemonMetrics.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/SourceNames.h"
#include "telemetry/metrics/Catalog.h"
#include "tierd/sys/Parsers.h"

namespace tierd::daemon {

using namespace telemetry::metric;

std::string sourceLabel(const std::string& sourceName) {
  const auto kind = telemetry::sourceKindOf(sourceName);
  return kind ? std::string(telemetry::sourceInfo(*kind).metricLabel) : "";
}

std::optional<double> taskCpuSeconds(const sys::SysRoot& root, pid_t pid) {
  const double ticksPerSecond = root.isLive() ? static_cast<double>(::sysconf(_SC_CLK_TCK)) : 100.0;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto text = root.read(path);
  if (!text) return std::nullopt;
  auto ticks = sys::parseStatCpuTicks(text.value(), root.path(path));
  if (!ticks) return std::nullopt;
  return static_cast<double>(ticks.value()) / ticksPerSecond;
}

std::vector<SourceSnapshot> snapshotSources(const Engine& engine, const sys::SysRoot& root) {
  std::vector<SourceSnapshot> out;
  for (const auto& [pid, source] : engine.sources()) {
    SourceSnapshot s;
    s.pid = pid;
    s.name = source->name();
    s.stats = source->stats();
    if (auto* perf = dynamic_cast<const telemetry::PerfSampler*>(source)) {
      s.period = perf->period();
      s.openEvents = perf->openEvents();
    }
    if (auto* damon = dynamic_cast<const telemetry::DamonSource*>(source)) {
      s.intervalSec = static_cast<double>(damon->sampleUs()) / 1e6;  // tuned, not configured
      if (auto kd = damon->kdamondPid()) {
        s.workerPid = *kd;
        s.workerCpuSeconds = taskCpuSeconds(root, *kd);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

const std::vector<std::string>& labelValues(telemetry::MetricId id, const std::string& label) {
  static const std::vector<std::string> kNone;
  for (const auto& l : telemetry::metricDef(id).labels)
    if (l.name == label) return l.values;
  return kNone;
}

}  // namespace

void DaemonMetrics::zeroWorkloadCounters(const policy::CompiledConfig& config) {
  for (const auto& w : config.workloads)
    for (const char* dir : {"promote", "demote"})
      sink_.add(kWorkloadMigratedBytes, {w.name, dir}, 0);
}

void DaemonMetrics::start(const policy::CompiledConfig& config,
                          const std::vector<uint64_t>& pageSizes, const std::string& sourceName) {
  std::vector<std::string> names;
  for (const auto& w : config.workloads)
    names.push_back(w.name);
  sink_.setWorkloads(names);

  std::set<std::string> sizes;
  for (uint64_t p : pageSizes)
    sizes.insert(telemetry::pageSizeLabel(p));
  for (const char* dir : {"promote", "demote"}) {
    for (const std::string& ps : sizes)
      for (const std::string& result : labelValues(telemetry::MetricId::MigratePages, "result")) {
        sink_.add(kMigratePages, {dir, ps, result}, 0);
        sink_.add(kMigrateBytes, {dir, ps, result}, 0);
      }
    sink_.add(kMigrateSystemCpu, {dir}, 0);
    sink_.declare(kMigrateCallDuration, {dir});  // count 0 until a batch makes move calls
    sink_.add(kArbiterPingpongMoves, {dir}, 0);
  }
  sink_.add(kArbiterPingpongHolds, {}, 0);
  for (const std::string& reason :
       labelValues(telemetry::MetricId::ArbiterSkippedCandidates, "reason"))
    sink_.add(kArbiterSkippedCandidates, {reason}, 0);
  sink_.add(kMigrateThpSplitAfterMove, {}, 0);
  sink_.add(kMigrateIdentityCheckFailures, {}, 0);
  sink_.add(kScopePidReuses, {}, 0);
  sink_.add(kSamplerSourceRetries, {}, 0);
  sink_.add(kSamplerPausedSeconds, {}, 0);
  for (const std::string& err : labelValues(telemetry::MetricId::DaemonErrors, "errno"))
    sink_.add(kDaemonErrors, {"migrate", err}, 0);
  for (const char* c : {"sampler", "scope", "topology", "metrics"})
    sink_.add(kDaemonErrors, {c, "other"}, 0);
  for (const std::string& c : labelValues(telemetry::MetricId::DaemonCpu, "component"))
    sink_.add(kDaemonCpu, {c}, 0);
  for (const char* result : {"ok", "failed"})
    sink_.add(kDaemonTicks, {result}, 0);
  if (const std::string label = sourceLabel(sourceName); !label.empty()) {
    sink_.add(kSamplerSamples, {label}, 0);
    sink_.add(kSamplerLostSamples, {label}, 0);
    sink_.add(kSamplerThrottleEvents, {label}, 0);
    sink_.add(kSamplerBudgetBackoffs, {label}, 0);
  }
  sink_.add(kConfigReloads, {"success"}, 0);
  sink_.add(kConfigReloads, {"failure"}, 0);
  // The sink counts a rejected update under the metric's catalog name: any of them may be next.
  for (const auto& def : telemetry::catalog())
    sink_.add(kMetricsRejectedUpdates, {def.name}, 0);
  zeroWorkloadCounters(config);
}

void DaemonMetrics::setWorkloads(const policy::CompiledConfig& config) {
  std::vector<std::string> names;
  for (const auto& w : config.workloads)
    names.push_back(w.name);
  sink_.setWorkloads(names);
  zeroWorkloadCounters(config);
}

void DaemonMetrics::configReload(bool ok) {
  sink_.add(kConfigReloads, {ok ? "success" : "failure"}, 1);
}

void DaemonMetrics::capability(const std::string& name, bool available) {
  sink_.set(kKernelCapability, {name}, available ? 1 : 0);
}

void DaemonMetrics::tick(const TickReport& report, const std::vector<SourceSnapshot>& sources,
                         double wallSeconds, const std::function<std::string(pid_t)>& workloadOf) {
  const PhaseCpu& cpu = report.cpu;
  auto sec = [](uint64_t ns) { return static_cast<double>(ns) / 1e9; };
  const uint64_t topo = std::min(cpu.topologyNs, cpu.topologyScopeNs);
  sink_.add(kDaemonCpu, {"topology"}, sec(topo));
  sink_.add(kDaemonCpu, {"scope"}, sec(cpu.topologyScopeNs - topo));
  sink_.add(kDaemonCpu, {"sampler"}, sec(cpu.samplingNs));
  sink_.add(kDaemonCpu, {"policy"}, sec(cpu.policyNs));
  sink_.add(kDaemonCpu, {"migrate"}, sec(cpu.locateNs + cpu.migrateNs));

  // Sources: increases of each process's totals, summed per source label.
  std::map<std::string, telemetry::SourceStats> inc;
  std::map<pid_t, telemetry::SourceStats> seen;
  std::map<std::string, uint64_t> period;
  std::map<std::string, double> interval;
  std::map<std::string, double> workerCpu;     // per label: kdamond CPU seconds this tick
  std::map<std::string, uint64_t> openEvents;  // per label: perf events open now
  std::map<pid_t, std::pair<pid_t, double>> workers;
  for (const SourceSnapshot& s : sources) {
    const std::string label = sourceLabel(s.name);
    if (label.empty()) continue;
    telemetry::SourceStats last;
    if (auto it = lastSource_.find(s.pid); it != lastSource_.end()) last = it->second;
    auto delta = [](uint64_t now, uint64_t before) { return now >= before ? now - before : now; };
    telemetry::SourceStats& d = inc[label];
    d.samples += delta(s.stats.samples, last.samples);
    d.lost += delta(s.stats.lost, last.lost);
    d.throttled += delta(s.stats.throttled, last.throttled);
    d.budgetBackoffs += delta(s.stats.budgetBackoffs, last.budgetBackoffs);
    seen[s.pid] = s.stats;
    period[label] = s.period.value_or(0);
    interval[label] = s.intervalSec.value_or(0);
    if (s.openEvents) openEvents[label] += *s.openEvents;
    if (s.workerPid != 0 && s.workerCpuSeconds) {
      // A worker first seen (or a new kdamond for this pid) started within this tick: all of
      // its CPU is this tick's.
      double before = 0;
      if (auto it = lastWorker_.find(s.pid);
          it != lastWorker_.end() && it->second.first == s.workerPid)
        before = std::min(it->second.second, *s.workerCpuSeconds);
      workerCpu[label] += *s.workerCpuSeconds - before;
      workers[s.pid] = {s.workerPid, *s.workerCpuSeconds};
    }
  }
  lastSource_ = std::move(seen);
  lastWorker_ = std::move(workers);
  for (const auto& [label, d] : inc) {
    sink_.add(kSamplerSamples, {label}, static_cast<double>(d.samples));
    sink_.add(kSamplerLostSamples, {label}, static_cast<double>(d.lost));
    sink_.add(kSamplerThrottleEvents, {label}, static_cast<double>(d.throttled));
    sink_.add(kSamplerBudgetBackoffs, {label}, static_cast<double>(d.budgetBackoffs));
    // One source kind runs per daemon, so the sampler phase's CPU is that source's; its kernel
    // workers (our kdamonds) sample on their own threads, beside it.
    if (wallSeconds > 0)
      sink_.set(kSamplerOverhead, {label}, (sec(cpu.samplingNs) + workerCpu[label]) / wallSeconds);
    sink_.set(kSamplerPeriod, {label}, static_cast<double>(period[label]));
    sink_.set(kSamplerInterval, {label}, interval[label]);
    if (auto it = openEvents.find(label); it != openEvents.end())
      sink_.set(kSamplerOpenPerfEvents, {label}, static_cast<double>(it->second));
  }

  sink_.set(kPlacementSettled, {}, report.settled ? 1 : 0);
  if (report.nextIntervalNs > 0) sink_.set(kTickInterval, {}, sec(report.nextIntervalNs));
  for (const WorkloadReport& w : report.workloads) {
    sink_.set(kHotnessHotBytes, {w.name, "fast"}, static_cast<double>(w.hotFastBytes));
    sink_.set(kHotnessHotBytes, {w.name, "slow"}, static_cast<double>(w.hotSlowBytes));
    sink_.set(kHotnessColdBytes, {w.name, "fast"}, static_cast<double>(w.coldFastBytes));
    sink_.set(kHotnessColdBytes, {w.name, "slow"}, static_cast<double>(w.coldSlowBytes));
    NodeMemory fast, slow;
    for (const auto& [node, mem] : w.memory) {
      const bool isFast = std::find(report.fastNodes.begin(), report.fastNodes.end(), node) !=
                          report.fastNodes.end();
      const bool isSlow = std::find(report.slowNodes.begin(), report.slowNodes.end(), node) !=
                          report.slowNodes.end();
      if (!isFast && !isSlow) continue;  // a node of no tier
      NodeMemory& t = isFast ? fast : slow;
      t.anon += mem.anon;
      t.file += mem.file;
    }
    sink_.set(kWorkloadMemoryBytes, {w.name, "fast", "anon"}, static_cast<double>(fast.anon));
    sink_.set(kWorkloadMemoryBytes, {w.name, "fast", "file"}, static_cast<double>(fast.file));
    sink_.set(kWorkloadMemoryBytes, {w.name, "slow", "anon"}, static_cast<double>(slow.anon));
    sink_.set(kWorkloadMemoryBytes, {w.name, "slow", "file"}, static_cast<double>(slow.file));
    const bool numaStat = w.memorySource == MemorySource::NumaStat;
    sink_.set(kWorkloadMemorySource, {w.name, "numa_stat"}, numaStat ? 1 : 0);
    sink_.set(kWorkloadMemorySource, {w.name, "numa_maps"}, numaStat ? 0 : 1);
  }

  const policy::ArbiterStats& a = report.arbiter;
  sink_.add(kArbiterSkippedCandidates, {"budget"}, static_cast<double>(a.skippedBudget));
  sink_.add(kArbiterSkippedCandidates, {"no_room"}, static_cast<double>(a.skippedNoRoom));
  sink_.add(kArbiterSkippedCandidates, {"quota"}, static_cast<double>(a.skippedQuota));
  sink_.add(kArbiterSkippedCandidates, {"not_allowed"}, static_cast<double>(a.skippedNotAllowed));
  sink_.add(kArbiterSkippedCandidates, {"not_closer"}, static_cast<double>(a.skippedNotCloser));
  sink_.add(kArbiterSkippedCandidates, {"fill_no_room"}, static_cast<double>(a.skippedFillNoRoom));

  if (!report.batch.ranges.empty()) {
    meter_.recordBatch(report.batch, workloadOf, sink_);
    // Ping-pong from the moves really made this tick (policy/PingPong.h).
    const policy::PingPongCounts pp = pingPong_.recordBatch(report.batch.ranges, report.nowNs);
    sink_.add(kArbiterPingpongMoves, {"promote"}, static_cast<double>(pp.promote));
    sink_.add(kArbiterPingpongMoves, {"demote"}, static_cast<double>(pp.demote));
  }
}

void DaemonMetrics::totals(const EngineTotals& t, uint64_t pingPongHeldTotal) {
  auto inc = [](uint64_t now, uint64_t before) {
    return static_cast<double>(now >= before ? now - before : 0);
  };
  sink_.add(kDaemonErrors, {"sampler", "other"}, inc(t.sourceErrors, lastTotals_.sourceErrors));
  sink_.add(kDaemonErrors, {"scope", "other"}, inc(t.scopeErrors, lastTotals_.scopeErrors));
  sink_.add(kDaemonErrors, {"migrate", "other"}, inc(t.locateErrors, lastTotals_.locateErrors));
  sink_.add(kSamplerSourceRetries, {}, inc(t.sourceRetries, lastTotals_.sourceRetries));
  sink_.add(kScopePidReuses, {}, inc(t.pidReuses, lastTotals_.pidReuses));
  sink_.add(kMigrateIdentityCheckFailures, {},
            inc(t.identityChecksFailed, lastTotals_.identityChecksFailed));
  sink_.add(kMigrateThpSplitAfterMove, {}, inc(t.thpSplitAfterMove, lastTotals_.thpSplitAfterMove));
  sink_.add(kSamplerPausedSeconds, {}, inc(t.samplingPausedNs, lastTotals_.samplingPausedNs) / 1e9);
  lastTotals_ = t;
  sink_.add(kArbiterPingpongHolds, {}, inc(pingPongHeldTotal, lastPingPong_));
  lastPingPong_ = pingPongHeldTotal;
}

void DaemonMetrics::tickFailed() {
  sink_.add(kDaemonErrors, {"topology", "other"}, 1);
}

void DaemonMetrics::tickDone(bool ok, double realtimeSeconds) {
  sink_.add(kDaemonTicks, {ok ? "ok" : "failed"}, 1);
  sink_.set(kDaemonLastTick, {}, realtimeSeconds);
}

void DaemonMetrics::vmstat(const std::map<std::string, int64_t>& values) {
  vmstat_.update(values, sink_);
}

void DaemonMetrics::migrateOffload(const std::map<std::string, int64_t>& counters) {
  offload_.update(counters, sink_);
}

void DaemonMetrics::metricsError(int err) {
  sink_.add(kDaemonErrors, {"metrics", telemetry::errnoLabel(err)}, 1);
}

void DaemonMetrics::loopCpu(const std::string& component, double seconds) {
  sink_.add(kDaemonCpu, {component}, seconds);
}

}  // namespace tierd::daemon

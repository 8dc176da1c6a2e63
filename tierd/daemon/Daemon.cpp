#include "tierd/daemon/Daemon.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string_view>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigStore.h"
#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/PerfEventOpener.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "telemetry/hotness/SourceNames.h"
#include "telemetry/hotness/Trace.h"
#include "telemetry/metrics/CpuTime.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Log.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/DaemonMetrics.h"
#include "tierd/daemon/Engine.h"
#include "tierd/daemon/Service.h"
#include "tierd/daemon/Signals.h"
#include "tierd/daemon/TopologyMetrics.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/Capabilities.h"
#include "tierd/sys/Parsers.h"
#include "tierd/sys/Vmstat.h"

namespace tierd::daemon {
namespace {

// The daemon's log: leveled lines on stderr (journald when run as a service), rate-limited.
class DaemonLog {
 public:
  DaemonLog() : logger_({LogLevel::Info, stderrIsJournal()}) {}
  void error(const std::string& m) { logger_.log(LogLevel::Error, m, monotonicNs()); }
  void warning(const std::string& m) { logger_.log(LogLevel::Warning, m, monotonicNs()); }
  void notice(const std::string& m) { logger_.log(LogLevel::Notice, m, monotonicNs()); }
  void info(const std::string& m) { logger_.log(LogLevel::Info, m, monotonicNs()); }

 private:
  Logger logger_;
};

void printErrors(DaemonLog& log, const std::vector<policy::ConfigError>& errors,
                 const std::string& path) {
  for (const policy::ConfigError& e : errors)
    log.error(e.describe());
  log.error(path + ": " + std::to_string(errors.size()) + " error" +
            (errors.size() == 1 ? "" : "s"));
}

// A sink that drops every update: the metrics are still computed when the exporter is off
// (daemon.metrics_listen = ""), so the loop has one path.
class NullSink : public telemetry::MetricsSink {
 protected:
  void doAdd(const telemetry::MetricDef&, const telemetry::LabelValues&, double) override {}
  void doSet(const telemetry::MetricDef&, const telemetry::LabelValues&, double) override {}
  void doObserve(const telemetry::MetricDef&, const telemetry::LabelValues&, double) override {}
  void doDeclare(const telemetry::MetricDef&, const telemetry::LabelValues&) override {}
  void removeWorkloadSeries(const std::set<std::string>&) override {}
};

// Whether move_pages(2) answers here: a location query (nodes = NULL) of one of our own pages.
bool movePagesWorks(migrate::PageSystem& system) {
  static int probe = 0;
  void* page = &probe;
  int status = -1;
  return system.movePages(::getpid(), 1, &page, nullptr, &status, 0) == 0 && status >= 0;
}

std::string statusText(uint64_t tickNo, const policy::CompiledConfig& c) {
  return "tick " + std::to_string(tickNo) + ", " + std::to_string(c.workloads.size()) +
         " workloads" + (c.daemon.dryRun ? ", dry run" : "");
}

// DAMON monitoring attributes for one process: 2 ms sampling to start with (at DAMON's default
// 5 ms every cold 2 MiB THP of a fast GUPS was seen accessed in every check, so all regions
// looked equally hot; tests/vm/scenarios/hotness needed 2 ms too), then adapted to the access
// ratio; 100 ms aggregation; 100..1000 adaptive regions; tried regions read once per second.
// Denser regions (min_nr_regions = size / 2 or 4 MiB) cost more kdamond and tierd CPU under
// emulation and converged more slowly; tried again on 2026-12-01 for a fleet of three 512 MiB
// GUPS (one region per 2 MiB, up to 500): the hottest chunk still read only ~2x its process's
// mean heat, and under load two of the three kdamonds gave one snapshot in 150 s.
telemetry::DamonConfig damonConfigFor() {
  telemetry::DamonConfig c;
  c.sampleUs = 2000;
  c.aggrUs = 100000;
  c.updateUs = 1000000;
  c.minRegions = 100;
  c.maxRegions = 1000;
  c.snapshotNs = 1'000'000'000;
  // A fast workload touches its cold pages within any fixed interval (REFERENCE.md section 5):
  // keep the share of checks that see an access between 5% and 30% so hot and cold stay apart.
  c.adaptiveSampling = true;
  c.minSampleUs = 500;
  c.maxSampleUs = 20000;
  return c;
}

std::string progressLine(uint64_t tickNo, const TickReport& r, double cpuSeconds) {
  std::string line = "tick " + std::to_string(tickNo) + ":";
  for (const WorkloadReport& w : r.workloads) {
    const uint64_t hot = w.hotFastBytes + w.hotSlowBytes;
    char pct[32];
    std::snprintf(
        pct, sizeof pct, "%.0f%%",
        hot ? 100.0 * static_cast<double>(w.hotFastBytes) / static_cast<double>(hot) : 0.0);
    line += " " + w.name + " pids=" + std::to_string(w.pids) + " fast=" + formatBytes(w.fastBytes) +
            " slow=" + formatBytes(w.slowBytes) + " hot-on-fast=" + pct + " of " +
            formatBytes(hot) + ";";
  }
  char tail[256];
  auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  std::snprintf(tail, sizeof tail,
                " promoted=%s demoted=%s samples=%llu cpu=%.2fs (tick ms: scope %.1f locate %.1f "
                "sampling %.1f policy %.1f migrate %.1f)%s",
                formatBytes(r.promotedBytes).c_str(), formatBytes(r.demotedBytes).c_str(),
                static_cast<unsigned long long>(r.samples), cpuSeconds, ms(r.cpu.topologyScopeNs),
                ms(r.cpu.locateNs), ms(r.cpu.samplingNs), ms(r.cpu.policyNs), ms(r.cpu.migrateNs),
                r.dryRun ? " (dry run)" : "");
  line += tail;
  // Why candidates were left this tick (policy::ArbiterStats), only the reasons that occurred.
  const policy::ArbiterStats& a = r.arbiter;
  std::string left;
  for (const auto& [n, why] : {std::pair{a.skippedBudget, "budget"},
                               {a.skippedNoRoom, "no-room"},
                               {a.skippedQuota, "quota"},
                               {a.skippedNotAllowed, "not-allowed"},
                               {a.skippedNotCloser, "not-closer"},
                               {a.coolingDown, "cooling-down"},
                               {a.held, "held"}})
    if (n) left += std::string(left.empty() ? "" : " ") + why + "=" + std::to_string(n);
  if (!left.empty()) line += " left: " + left;
  for (const SourceState& st : r.sourceStates) {
    line += " [pid " + std::to_string(st.pid) + " " + st.source + " " + st.state;
    if (st.regions) {
      char heat[160];
      std::snprintf(heat, sizeof heat, " | heat mean=%.1f max=%.1f cut=%.1f hot=%s (%s slow)",
                    st.meanHeat, st.maxHeat, st.cut,
                    formatBytes(st.hotFastBytes + st.hotSlowBytes).c_str(),
                    formatBytes(st.hotSlowBytes).c_str());
      line += heat;
    }
    line += "]";
  }
  return line;
}

// Reduces a root tierd to the capabilities it needs (tierd/sys/Capabilities.h). Returns false
// when that fails (tierd must not run with more rights than it was meant to have).
bool dropCapabilities(DaemonLog& log) {
  auto current = sys::readCapabilities();
  if (!current) {
    log.error(current.error().describe());
    return false;
  }
  const sys::CapabilityPlan plan = sys::planCapabilityDrop(*current, sys::daemonCapabilities());
  if (plan.missing)
    log.warning("capabilities not permitted (what needs them will fail): " +
                sys::capabilityNames(plan.missing));
  if (!plan.changes()) return true;
  if (Status s = sys::applyCapabilityPlan(plan); !s) {
    log.error(s.error().describe());
    return false;
  }
  log.info("capabilities reduced to " + sys::capabilityNames(plan.permitted));
  return true;
}

}  // namespace

std::string chooseSource(const policy::CompiledConfig& c, const telemetry::SamplingProbe& probe,
                         std::string& why) {
  auto available = [&](std::string_view name) {
    for (const auto& s : probe.sources)
      if (s.name == name) return s.available;
    return false;
  };
  using telemetry::sourceInfo;
  using telemetry::SourceKind;
  switch (c.sampling.source) {
    case policy::SampleSource::Damon:
      why = "configured";
      return std::string(sourceInfo(SourceKind::DamonVaddr).name);
    case policy::SampleSource::Perf:
      why = "configured";
      for (SourceKind k : {SourceKind::PerfPebs, SourceKind::PerfIbs})
        if (available(sourceInfo(k).name)) return std::string(sourceInfo(k).name);
      return std::string(sourceInfo(SourceKind::PerfPebs).name);
    case policy::SampleSource::Replay:
      why = "configured";
      return std::string(sourceInfo(SourceKind::Replay).name);
    case policy::SampleSource::Auto:
      break;
  }
  // Best first, as the probe orders them: PEBS / IBS (per-thread events of each scoped process:
  // the sampler opens one per thread, cpu -1, and follows new threads), DAMON vaddr, software
  // page faults.
  for (const auto& s : probe.sources) {
    if (!s.available) continue;
    const auto kind = telemetry::sourceKindOf(s.name);
    if (kind && *kind != SourceKind::Replay) {
      why = s.why;
      return s.name;
    }
  }
  why = "no source available (tierctl sampling --probe)";
  return "";
}

int runDaemon(const DaemonOptions& options) {
  DaemonLog log;
  // First, while this is the only thread: capabilities are per thread and inherited.
  if (options.dropCapabilities && ::geteuid() == 0 && !dropCapabilities(log)) return 1;
  // The config and its profiles decide which memory tierd moves with root's rights: each is
  // refused when another user could change it, checked on the opened file (no check-then-open).
  policy::CompileOptions compileOptions;
  compileOptions.trustedUid = ::geteuid();
  compileOptions.checkTrace = checkReplayTrace;
  policy::CompileOutcome compiled = policy::compileConfigFile(options.configPath, compileOptions);
  if (!compiled.ok()) {
    printErrors(log, compiled.errors, options.configPath);
    return 1;
  }
  policy::CompiledConfig initial = *compiled.config;
  if (initial.sampling.source == policy::SampleSource::Replay) {
    // Said once at start, not once per process: a trace's pids and addresses are those of the
    // recording, so the daemon cannot move live memory by it.
    log.error(options.configPath +
              ": sampling.source = \"replay\" is not supported by the daemon (it samples live "
              "processes); replay the trace offline: tierctl simulate --trace " +
              initial.sampling.trace + " --config " + options.configPath + " --topology DIR");
    return 1;
  }
  if (options.dryRun) initial.daemon.dryRun = true;
  policy::ConfigStore store(initial, compileOptions);
  const service::ServiceNotifier notifier = service::ServiceNotifier::fromEnvironment();

  sys::SysRoot root(options.sysRoot);
  // Before any thread starts (the exporter's too): the signal mask is inherited.
  auto waiter = SignalWaiter::create();
  if (!waiter) {
    log.error(waiter.error().describe());
    return 1;
  }

  // The exporter. Its address and credentials are read at start only (a reload keeps them).
  std::unique_ptr<telemetry::MetricsSink> sink;
  if (!initial.daemon.metricsListen.empty()) {
    auto started = telemetry::PrometheusSink::start(exporterOptions(initial));
    if (!started) {
      log.error("cannot serve metrics: " + started.error().describe());
      return 1;
    }
    log.notice("metrics on http://" + initial.daemon.metricsListen + "/metrics" +
               (initial.daemon.metricsBasicAuthFile.empty()
                    ? std::string()
                    : " (basic auth from " + initial.daemon.metricsBasicAuthFile + ")"));
    sink = std::move(started.value());
  } else {
    log.notice("metrics exporter off (daemon.metrics_listen = \"\")");
    sink = std::make_unique<NullSink>();
  }
  DaemonMetrics metrics(*sink);

  telemetry::SysRootDamonFs damonFs(root);
  telemetry::LinuxPerfEventOpener opener;
  // DAMON: kdamonds a killed tierd left running are reclaimed before anything is probed, and
  // DAMON_STAT is turned off only where the config says so (sampling.damon_stat).
  telemetry::DamonPoolConfig poolConfig;
  poolConfig.capacity = initial.sampling.damonMaxProcesses;
  poolConfig.ownerFile = root.path("/run/tierd/damon.owner");
  poolConfig.selfPid = ::getpid();
  if (auto self = root.read("/proc/self/stat"))
    poolConfig.selfStartTime = sys::parseStatStartTime(self.value(), "/proc/self/stat").valueOr(0);
  telemetry::DamonPool damonPool(damonFs, poolConfig);
  if (auto reclaimed = damonPool.reclaimOrphans(); !reclaimed)
    log.warning("DAMON: " + reclaimed.error().describe());
  else if (reclaimed.value() > 0)
    log.notice("DAMON: reclaimed " + std::to_string(reclaimed.value()) +
               " kdamonds left by a tierd that is gone (" + poolConfig.ownerFile + ")");
  if (telemetry::exclusiveHolder(damonFs) == "damon_stat") {
    if (initial.sampling.disableDamonStat) {
      const std::string param = "/sys/module/damon_stat/parameters/enabled";
      if (Status st = damonFs.write(param, "N"); st)
        log.notice("DAMON: turned DAMON_STAT off (sampling.damon_stat = \"disable\")");
      else
        log.warning("DAMON: cannot turn DAMON_STAT off: " + st.error().describe());
    } else {
      log.warning("DAMON: " + telemetry::exclusiveHolderWhy("damon_stat"));
    }
  }
  const telemetry::SamplingProbe probe = telemetry::probeSampling(root, damonFs, ::geteuid() == 0);
  std::string why;
  const std::string sourceName = chooseSource(initial, probe, why);
  log.notice("hotness source: " + (sourceName.empty() ? std::string("none") : sourceName) + " (" +
             why + ")");
  SourceFactory factory =
      [&](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
    if (sourceName.empty()) return Error::env(why, "sampling");
    telemetry::SamplingTarget target;
    target.pid = pid;
    return telemetry::makeSource(sourceName, probe, target, opener, damonFs, root, damonConfigFor(),
                                 perfTuning(*store.current()), &damonPool);
  };

  // Metrics known before the first tick: node capacities, capability flags, counters at 0.
  std::vector<uint64_t> pageSizes = {static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), 2 * kMiB};
  topology::TierOverride tiers;
  tiers.fastNodes = initial.tiers.fastNodes;
  tiers.slowNodes = initial.tiers.slowNodes;
  if (auto topo = topology::readTopology(root, tiers); topo) {
    if (topo->caps.basePageSize) pageSizes[0] = topo->caps.basePageSize;
    if (topo->caps.pmdPageSize) pageSizes[1] = topo->caps.pmdPageSize;
    publishTopology(topo.value(), *sink);
  }
  metrics.start(initial, pageSizes, sourceName);
  auto available = [&](std::string_view name) {
    for (const auto& s : probe.sources)
      if (s.name == name) return s.available;
    return false;
  };
  for (telemetry::SourceKind k : {telemetry::SourceKind::PerfPebs, telemetry::SourceKind::PerfIbs,
                                  telemetry::SourceKind::PerfSoftware}) {
    const telemetry::SourceInfo& s = telemetry::sourceInfo(k);
    metrics.capability(std::string(s.capability), available(s.name));
  }
  metrics.capability("move_pages", movePagesWorks(*migrate::makeLinuxPageSystem(root)));

  Engine engine(root,
                std::make_unique<migrate::MovePagesMigrator>(migratorConfig(initial),
                                                             migrate::makeLinuxPageSystem(root)),
                factory, ::getpid(), store.current());

  // The signal thread: SIGTERM/SIGINT set `stop` (checked by the migrator between calls),
  // SIGHUP sets `reload`; both wake the main loop.
  std::atomic<bool> stop{false};
  std::atomic<bool> reload{false};
  std::mutex mu;
  std::condition_variable cv;
  // Joined by its destructor, before `engine` is destroyed, also when an exception unwinds.
  SignalThread signals(*waiter.value(), [&](Wake w) {
    {
      std::lock_guard<std::mutex> lock(mu);
      (w == Wake::Stop ? stop : reload).store(true);
    }
    cv.notify_all();
  });

  log.notice("running with " + options.configPath + " (" +
             std::to_string(store.current()->workloads.size()) + " workloads, tick " +
             std::to_string(store.current()->daemon.intervalNs / 1'000'000) + " ms" +
             (store.current()->daemon.dryRun ? ", dry run" : "") + ")");
  const auto watchdogEvery = notifier.watchdogInterval();
  auto nextWatchdog = std::chrono::steady_clock::now();
  auto petWatchdog = [&] {
    if (!watchdogEvery || std::chrono::steady_clock::now() < nextWatchdog) return;
    if (Status s = notifier.watchdog(); !s) log.warning("sd_notify: " + s.error().describe());
    nextWatchdog = std::chrono::steady_clock::now() + *watchdogEvery;
  };
  int rc = 0;
  uint64_t tickNo = 0;
  uint64_t lastTickNs = 0;
  double cpuMark = telemetry::threadCpuSeconds();
  while (!stop.load()) {
    if (reload.exchange(false)) {
      (void)notifier.reloading();
      auto errors = store.requestReload(options.configPath);
      if (!errors.empty()) {
        printErrors(log, errors, options.configPath);
        log.warning("reload failed; keeping the running config");
        metrics.configReload(false);
        (void)notifier.ready(statusText(tickNo, engine.config()));
      }
    }
    if (store.applyPending()) {
      auto next = std::make_shared<policy::CompiledConfig>(*store.current());
      if (options.dryRun) next->daemon.dryRun = true;
      engine.setConfig(next);
      metrics.setWorkloads(*next);
      metrics.configReload(true);
      if (next->daemon.metricsListen != initial.daemon.metricsListen)
        log.warning("daemon.metrics_listen changed: takes effect when tierd restarts");
      if (next->daemon.metricsBasicAuthFile != initial.daemon.metricsBasicAuthFile)
        log.warning("daemon.metrics_basic_auth_file changed: takes effect when tierd restarts");
      if (next->sampling.source != initial.sampling.source)
        log.warning("sampling.source changed: takes effect when tierd restarts");
      log.notice("config reloaded");
      (void)notifier.ready(statusText(tickNo, *next));
    }
    const uint64_t start = monotonicNs();
    const uint64_t interval = engine.config().daemon.intervalNs;
    {
      const double now = telemetry::threadCpuSeconds();
      metrics.loopCpu("main", now - cpuMark);
      cpuMark = now;
    }
    auto report = engine.tick(start, static_cast<int64_t>(start + interval), &stop);
    ++tickNo;
    const double engineEnd = telemetry::threadCpuSeconds();
    const double wall = lastTickNs ? static_cast<double>(start - lastTickNs) / 1e9
                                   : static_cast<double>(interval) / 1e9;
    lastTickNs = start;
    if (!report) {
      log.error("tick " + std::to_string(tickNo) + ": " + report.error().describe());
      metrics.tickFailed();
    } else {
      for (const std::string& p : report->problems)
        log.warning(p);
      for (const std::string& c : report->scopeChanges)
        log.info(c);
      log.info(progressLine(tickNo, report.value(), processCpuSeconds()));
      publishTopology(report->topology, *sink);
      metrics.tick(report.value(), snapshotSources(engine, root), wall,
                   [&](pid_t pid) { return engine.workloadOf(pid); });
    }
    metrics.totals(engine.totals(), engine.heat().recordStats().pingPongHeld);
    if (auto vm = sys::readVmstat(root); vm) {
      metrics.vmstat(vm.value());
    } else {
      log.warning("vmstat: " + vm.error().describe());
      metrics.metricsError(vm.error().code);
    }
    cpuMark = telemetry::threadCpuSeconds();
    metrics.loopCpu("metrics", cpuMark - engineEnd);
    if (tickNo == 1) {
      if (Status s = notifier.ready(statusText(tickNo, engine.config())); !s)
        log.warning("sd_notify: " + s.error().describe());
    } else if (notifier.enabled() && tickNo % 10 == 0) {
      (void)notifier.status(statusText(tickNo, engine.config()));
    }
    petWatchdog();
    if (options.once || (options.ticks && tickNo >= *options.ticks)) break;
    // Sleep until the next tick, a signal, or the next watchdog ping, whichever comes first.
    const auto tickDue = std::chrono::steady_clock::now() +
                         std::chrono::nanoseconds(static_cast<int64_t>(start + interval) -
                                                  static_cast<int64_t>(monotonicNs()));
    std::unique_lock<std::mutex> lock(mu);
    while (!stop.load() && !reload.load() && std::chrono::steady_clock::now() < tickDue) {
      const auto until = watchdogEvery ? std::min(tickDue, nextWatchdog) : tickDue;
      cv.wait_until(lock, until, [&] { return stop.load() || reload.load(); });
      lock.unlock();
      petWatchdog();
      lock.lock();
    }
  }
  (void)notifier.stopping();
  engine.shutdown();
  const EngineTotals& t = engine.totals();
  char cpu[32];
  std::snprintf(cpu, sizeof cpu, "%.2f", processCpuSeconds());
  log.notice("stopped after " + std::to_string(t.ticks) + " ticks: promoted " +
             formatBytes(t.promotedBytes) + ", demoted " + formatBytes(t.demotedBytes) + ", " +
             std::to_string(t.samples) + " samples, cpu " + cpu +
             " s (moved_bytes=" + std::to_string(t.promotedBytes + t.demotedBytes) + ")");
  return rc;
}

}  // namespace tierd::daemon

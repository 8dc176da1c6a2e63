#include "tierd/daemon/Daemon.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigStore.h"
#include "policy/ConfigUnits.h"
#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/DamonTrace.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/hotness/PerfEventOpener.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "telemetry/hotness/SourceNames.h"
#include "telemetry/hotness/Trace.h"
#include "telemetry/metrics/CpuTime.h"
#include "telemetry/metrics/ExporterProcess.h"
#include "telemetry/metrics/LoopHealth.h"
#include "telemetry/metrics/ProcessMetrics.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Log.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Conditions.h"
#include "tierd/daemon/Control.h"
#include "tierd/daemon/ControlStatus.h"
#include "tierd/daemon/DaemonMetrics.h"
#include "tierd/daemon/Engine.h"
#include "tierd/daemon/Service.h"
#include "tierd/daemon/Signals.h"
#include "tierd/daemon/TopologyMetrics.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/scope/Scope.h"
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
  // daemon.log_level (the compiler accepts only level names).
  void setLevel(const std::string& name) {
    LogLevel l = LogLevel::Info;
    if (parseLogLevel(name, l)) logger_.setMinLevel(l);
  }

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

// `intervalNs`: daemon.interval, so the line names only a settled wait that is longer.
std::string progressLine(uint64_t tickNo, const TickReport& r, double cpuSeconds,
                         uint64_t intervalNs) {
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
                " promoted=%s demoted=%s samples=%llu cpu=%.2fs (tick ms: topology %.1f scope %.1f "
                "locate %.1f sampling %.1f policy %.1f migrate %.1f)%s",
                formatBytes(r.promotedBytes).c_str(), formatBytes(r.demotedBytes).c_str(),
                static_cast<unsigned long long>(r.samples), cpuSeconds, ms(r.cpu.topologyNs),
                ms(r.cpu.topologyScopeNs - std::min(r.cpu.topologyNs, r.cpu.topologyScopeNs)),
                ms(r.cpu.locateNs), ms(r.cpu.samplingNs), ms(r.cpu.policyNs), ms(r.cpu.migrateNs),
                r.dryRun ? " (dry run)" : "");
  line += tail;
  // Processes whose locations were reused, not read (Engine::tick, daemon.full_locate_interval).
  if (r.locatesReused) line += " locate-reused=" + std::to_string(r.locatesReused);
  // Ranges a move left uncertain, queried alone (Engine::tick, "locate phase").
  if (r.rangesRelocated) line += " relocated=" + std::to_string(r.rangesRelocated);
  // Placement settled (Engine::tick, "Settling"): the bytes the last ticks' plans moved.
  if (r.settled) line += " settled (window " + formatBytes(r.settleWindowBytes) + ")";
  if (r.settled && r.nextIntervalNs > intervalNs)
    line += " next tick in " + policy::formatDuration(r.nextIntervalNs);
  // Why candidates were left this tick (policy::ArbiterStats), only the reasons that occurred.
  std::string left;
  for (const auto& [why, n] : notMovedReasons(r.arbiter))
    left += (left.empty() ? "" : " ") + why + "=" + std::to_string(n);
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
  // CAP_SETUID and CAP_SETGID stay until the exporter process has switched users (Daemon::
  // startExporter drops them); without them a root tierd's exporter cannot start, and says so.
  const sys::CapabilityPlan plan = sys::planCapabilityDrop(
      *current, sys::daemonCapabilities() | sys::exporterSpawnCapabilities());
  if (const sys::CapMask missing = plan.missing & sys::daemonCapabilities())
    log.warning("capabilities not permitted (what needs them will fail): " +
                sys::capabilityNames(missing));
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
    case policy::SampleSource::PerfSwPageFaults:
      why = "configured";
      return std::string(sourceInfo(SourceKind::PerfSoftware).name);
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

namespace {

// Where the DAMON ownership record lives (under the SysRoot): a tmpfs the unit keeps across
// restarts (RuntimeDirectoryPreserve=yes) and a reboot empties.
constexpr std::string_view kDamonOwnerFile = "/run/tierd/damon.owner";
constexpr const char* kDamonStatEnabled = "/sys/module/damon_stat/parameters/enabled";

// The running daemon: runDaemon()'s state and its steps. start() builds what the loop needs, in
// this order: DAMON's recovery (what a killed tierd left, before anything that can fail), the
// config, the signal mask, the exporter, DAMON, the hotness source, the metrics
// known before the first tick, the engine, the signal thread; false when tierd cannot start
// (every reason logged). run() ticks until a stop (or --once / --ticks) and returns the exit
// code. Members are declared in that order, so they are destroyed in reverse: the signal thread
// is joined first, the engine goes before what its sources refer to.
class Daemon {
 public:
  Daemon(const DaemonOptions& options, DaemonLog& log) : options_(options), log_(log) {}
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  bool start() {
    root_ = sys::SysRoot(options_.sysRoot);
    recoverDamon();
    if (!loadConfig()) return false;
    notifier_.emplace(service::ServiceNotifier::fromEnvironment());
    // Before any thread starts (the exporter's too): the signal mask is inherited.
    auto waiter = SignalWaiter::create();
    if (!waiter) {
      log_.error(waiter.error().describe());
      return false;
    }
    waiter_ = std::move(waiter.value());
    if (!startExporter()) return false;
    prepareDamon();
    chooseHotnessSource();
    publishStartMetrics();
    // The locate phase's smaps and numa_maps reads, planned on by the migrator (ProcReads).
    auto reads = std::make_shared<migrate::ProcReads>();
    engine_.emplace(
        root_,
        std::make_unique<migrate::MovePagesMigrator>(migratorConfig(initial_),
                                                     migrate::makeLinuxPageSystem(root_), reads),
        [this](pid_t pid, const std::string&) { return sourceFor(pid); }, ::getpid(),
        store_->current(), MappingsReader{}, NumaMapsReader{}, MappingsReader{}, reads);
    // A `pids` entry stays pinned to its process across a restart (SysRootScopeProvider::keepPins).
    auto scopes = std::make_unique<scope::SysRootScopeProvider>(root_, ::getpid());
    const std::string pins = root_.path("/run/tierd/pids.pinned");
    if (Status st = scopes->keepPins(pins, options_.configPath); !st)
      log_.warning("pid pins: " + st.error().describe() + "; pids entries pin afresh");
    engine_->setScopeProvider(std::move(scopes));
    startSignalThread();
    startControl();
    log_.notice("running with " + options_.configPath + " (" +
                std::to_string(store_->current()->workloads.size()) + " workloads, tick " +
                std::to_string(store_->current()->daemon.intervalNs / 1'000'000) + " ms" +
                (store_->current()->daemon.dryRun ? ", dry run" : "") + ")");
    return true;
  }

  int run() {
    watchdogEvery_ = notifier_->watchdogInterval();
    nextWatchdog_ = std::chrono::steady_clock::now();
    cpuMark_ = telemetry::threadCpuSeconds();
    while (!stop_.load()) {
      checkExporter();
      reloadIfAsked();
      applyPendingConfig();
      wake_.store(false);  // this tick serves a restore asked during the wait
      applyOperatorHold();
      const uint64_t tickStart = monotonicNs();
      const uint64_t interval = engine_->config().daemon.intervalNs;
      const uint64_t next = tick(tickStart, interval);
      notifyService();
      petWatchdog();
      if (options_.once || (options_.ticks && tickNo_ >= *options_.ticks)) break;
      if (next > interval) waitPaused(tickStart + next, next);
      sleepUntil(tickStart + next);
    }
    (void)notifier_->stopping();
    control_.reset();     // no request reaches a stopping daemon
    engine_->shutdown();  // our kdamonds off and removed: DAMON_STAT can start again
    restoreDamonStat();
    logTotals();
    return 0;
  }

 private:
  // The config and its profiles decide which memory tierd moves with root's rights: each is
  // refused when another user could change it, checked on the opened file (no check-then-open).
  bool loadConfig() {
    compileOptions_ = daemonCompileOptions();  // the same as --check-config's
    policy::CompileOutcome compiled =
        policy::compileConfigFile(options_.configPath, compileOptions_);
    if (!compiled.ok()) {
      printErrors(log_, compiled.errors, options_.configPath);
      return false;
    }
    initial_ = *compiled.config;
    if (initial_.sampling.source == policy::SampleSource::Replay) {
      // Said once at start, not once per process: a trace's pids and addresses are those of the
      // recording, so the daemon cannot move live memory by it.
      log_.error(options_.configPath +
                 ": sampling.source = \"replay\" is not supported by the daemon (it samples live "
                 "processes); replay the trace offline: tierctl simulate --trace " +
                 initial_.sampling.trace + " --config " + options_.configPath + " --topology DIR");
      return false;
    }
    if (options_.dryRun) initial_.daemon.dryRun = true;
    store_.emplace(initial_, compileOptions_);
    log_.setLevel(initial_.daemon.logLevel);
    return true;
  }

  // The exporter: a process of its own that serves HTTP without privileges and asks this one
  // for the rendered metrics (telemetry/metrics/ExporterProcess.h). Its address, credentials and
  // user are read at start only (a reload keeps them). Then the capabilities that switched its
  // user are dropped, before any other thread of the daemon starts.
  bool startExporter() {
    if (!initial_.daemon.metricsListen.empty()) {
      const telemetry::ExporterOptions o = exporterOptions(initial_);
      telemetry::ExporterProcessOptions p;
      p.listenAddress = o.listenAddress;
      p.limits = o.limits;
      p.user = o.user;
      if (!o.basicAuthFile.empty()) {
        auto creds = telemetry::readBasicAuthFile(o.basicAuthFile);
        if (!creds) {
          log_.error("cannot serve metrics: " + creds.error().describe());
          return false;
        }
        p.credentials = creds.value();
      }
      auto sink = std::make_unique<telemetry::PrometheusSink>();
      telemetry::PrometheusSink* s = sink.get();
      auto spawned = telemetry::ExporterProcess::spawn(
          p, [s] { return s->render() + telemetry::processMetricsText(); },
          [this] { return health_.check(std::chrono::steady_clock::now()); });
      if (!spawned) {
        log_.error("cannot serve metrics: " + spawned.error().describe());
        return false;
      }
      sink_ = std::move(sink);
      exporter_ = std::move(spawned.value());
      log_.notice("metrics on http://" + exporter_->address() + "/metrics" +
                  (initial_.daemon.metricsBasicAuthFile.empty()
                       ? std::string()
                       : " (basic auth from " + initial_.daemon.metricsBasicAuthFile + ")") +
                  ", served by pid " + std::to_string(exporter_->pid()) + " as uid " +
                  std::to_string(exporter_->uid()) + " without capabilities");
    } else {
      log_.notice("metrics exporter off (daemon.metrics_listen = \"\")");
      sink_ = std::make_unique<NullSink>();
    }
    if (Status dropped = sys::dropPermitted(sys::exporterSpawnCapabilities()); !dropped) {
      log_.error(dropped.error().describe());
      return false;
    }
    if (exporter_)
      if (Status answering = exporter_->answer(); !answering) {
        log_.error("cannot serve metrics: " + answering.error().describe());
        return false;
      }
    metrics_.emplace(*sink_);
    return true;
  }

  // Says once that the exporter process ended. Tiering goes on: any process of the exporter's
  // user can kill it, and that must not stop the privileged job; tierd cannot start an
  // unprivileged one again (its capabilities to switch users are dropped), so the metrics stay
  // down (Prometheus sees the target down) until tierd restarts.
  void checkExporter() {
    if (!exporter_ || exporter_->running() || exporterGoneSaid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it be reaped
    const std::string how = exporter_->exitDescription();
    log_.error("the metrics exporter process (pid " + std::to_string(exporter_->pid()) + ") ended" +
               (how.empty() ? "" : " (" + how + ")") +
               "; metrics are down until tierd restarts, tiering goes on");
    exporterGoneSaid_ = true;
  }

  // What a killed tierd (or tierctl) left in the kernel, undone before anything that can fail
  // (a broken config, a taken port) ends this start: its kdamonds, as far as the ownership
  // record shows them ours (DamonPool.h), and the tracefs instances of kdamonds gone, whatever
  // the read mode. Needs no config.
  void recoverDamon() {
    damonFs_.emplace(root_);
    telemetry::DamonPool orphans(*damonFs_, damonPoolConfig(telemetry::kDefaultDamonKdamonds));
    if (auto reclaimed = orphans.reclaimOrphans(); !reclaimed)
      log_.warning("DAMON: " + reclaimed.error().describe());
    else if (reclaimed.value() > 0)
      log_.notice("DAMON: reclaimed " + std::to_string(reclaimed.value()) +
                  " kdamonds left by a tierd that is gone (" +
                  root_.path(std::string(kDamonOwnerFile)) + ")");
    if (auto tracefs = telemetry::findTracefs(*damonFs_))
      telemetry::removeStaleDamonTraceInstances(*damonFs_, *tracefs);
  }

  telemetry::DamonPoolConfig damonPoolConfig(int capacity) const {
    telemetry::DamonPoolConfig poolConfig;
    poolConfig.capacity = capacity;
    poolConfig.ownerFile = root_.path(std::string(kDamonOwnerFile));
    poolConfig.selfPid = ::getpid();
    if (auto self = root_.read("/proc/self/stat"))
      poolConfig.selfStartTime =
          sys::parseStatStartTime(self.value(), "/proc/self/stat").valueOr(0);
    return poolConfig;
  }

  // DAMON's pool, and DAMON_STAT turned off only where the config says so
  // (sampling.damon_stat) and this is no dry run, which changes no kernel setting.
  void prepareDamon() {
    opener_.emplace();
    damonPool_.emplace(*damonFs_, damonPoolConfig(initial_.sampling.damonMaxProcesses));
    if (telemetry::exclusiveHolder(*damonFs_) != "damon_stat") return;
    if (!initial_.sampling.disableDamonStat) {
      log_.warning("DAMON: " + telemetry::exclusiveHolderWhy("damon_stat"));
    } else if (initial_.daemon.dryRun) {
      log_.warning(
          "DAMON: dry run: DAMON_STAT left on (sampling.damon_stat = \"disable\" "
          "turns it off for a real run only); " +
          telemetry::exclusiveHolderWhy("damon_stat"));
    } else if (Status st = damonFs_->write(kDamonStatEnabled, "N"); st) {
      damonStatOff_ = true;
      log_.notice(
          "DAMON: turned DAMON_STAT off (sampling.damon_stat = \"disable\"; on again "
          "when tierd stops)");
    } else {
      log_.warning("DAMON: cannot turn DAMON_STAT off: " + st.error().describe());
    }
  }

  // DAMON_STAT back on where prepareDamon() turned it off, once our kdamonds are gone.
  void restoreDamonStat() {
    if (!damonStatOff_) return;
    damonStatOff_ = false;
    if (Status st = damonFs_->write(kDamonStatEnabled, "Y"); st)
      log_.notice("DAMON: turned DAMON_STAT on again");
    else
      log_.warning("DAMON: cannot turn DAMON_STAT on again: " + st.error().describe());
  }

  // The hotness source every scoped process gets (chooseSource over the sampling probe).
  void chooseHotnessSource() {
    // Without /proc/kallsyms: the kernel formats ~120k lines on every read (seconds of CPU in
    // an emulated guest); DamonSource::start checks avail_operations for vaddr instead.
    // CAP_SYS_ADMIN decides perf sampling where perf_event_paranoid is above 2; the daemon
    // dropped it at start unless run with --keep-capabilities.
    const auto caps = sys::readCapabilities();
    const bool sysAdmin = caps && (caps->effective & (sys::CapMask{1} << CAP_SYS_ADMIN)) != 0;
    probe_ = telemetry::probeSampling(root_, *damonFs_, ::geteuid() == 0, {},
                                      telemetry::VaddrEvidence::Skip, sysAdmin);
    sourceName_ = chooseSource(initial_, probe_, why_);
    log_.notice("hotness source: " + (sourceName_.empty() ? std::string("none") : sourceName_) +
                " (" + why_ + ")");
  }

  // The engine's SourceFactory: the chosen source for one scoped process.
  Result<std::unique_ptr<telemetry::HotnessSource>> sourceFor(pid_t pid) {
    if (sourceName_.empty()) return Error::env(why_, "sampling");
    telemetry::SamplingTarget target;
    target.pid = pid;
    return telemetry::makeSource(sourceName_, probe_, target, *opener_, *damonFs_, root_,
                                 damonTuning(*store_->current()), perfTuning(*store_->current()),
                                 &*damonPool_);
  }

  // Metrics known before the first tick: node capacities, capability flags, counters at 0.
  void publishStartMetrics() {
    std::vector<uint64_t> pageSizes = {static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), 2 * kMiB};
    std::map<std::string, int64_t> offload;
    topology::TierOverride tiers;
    tiers.fastNodes = initial_.tiers.fastNodes;
    tiers.slowNodes = initial_.tiers.slowNodes;
    if (auto topo = topology::readTopology(root_, tiers); topo) {
      if (topo->caps.basePageSize) pageSizes[0] = topo->caps.basePageSize;
      if (topo->caps.pmdPageSize) pageSizes[1] = topo->caps.pmdPageSize;
      publishTopology(topo.value(), *sink_);
      offload = migrateOffloadCounters(topo->caps);
    }
    metrics_->start(initial_, pageSizes, sourceName_);
    metrics_->migrateOffload(offload);
    auto available = [&](std::string_view name) {
      for (const auto& s : probe_.sources)
        if (s.name == name) return s.available;
      return false;
    };
    for (telemetry::SourceKind k : {telemetry::SourceKind::PerfPebs, telemetry::SourceKind::PerfIbs,
                                    telemetry::SourceKind::PerfSoftware}) {
      const telemetry::SourceInfo& s = telemetry::sourceInfo(k);
      metrics_->capability(std::string(s.capability), available(s.name));
    }
    metrics_->capability("move_pages", movePagesWorks(*migrate::makeLinuxPageSystem(root_)));
  }

  // The signal thread: SIGTERM/SIGINT set `stop` (checked by the migrator between calls),
  // SIGHUP sets `reload`; both wake the main loop.
  void startSignalThread() {
    signals_.emplace(*waiter_, [this](Wake w) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        (w == Wake::Stop ? stop_ : reload_).store(true);
      }
      cv_.notify_all();
    });
  }

  // The control socket (daemon.control_socket, under --sys-root), when configured: its
  // directory made 0700 when missing. Without it tierd runs on (a warning): the socket is how an
  // operator asks, not how tierd tiers.
  void startControl() {
    noteConfig(*store_->current());
    if (initial_.daemon.controlSocket.empty()) return;
    const std::string path = root_.path(initial_.daemon.controlSocket);
    const std::string dir = path.substr(0, path.rfind('/'));
    if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      log_.warning("control socket: cannot create " + dir + ": " + std::strerror(errno) +
                   "; tierctl status, pause, resume and restore are unavailable");
      return;
    }
    auto server = ControlServer::start(path, [this](const ControlRequest& r) { return answer(r); });
    if (!server) {
      log_.warning("control socket: " + server.error().describe() +
                   "; tierctl status, pause, resume and restore are unavailable");
      return;
    }
    control_ = std::move(server.value());
    log_.notice("control socket on " + path + " (tierctl status --socket " + path + ")");
  }

  // What the control thread needs of a config: its workload names and whether it is a dry run.
  void noteConfig(const policy::CompiledConfig& c) {
    std::lock_guard<std::mutex> lock(controlMu_);
    workloadNames_.clear();
    for (const auto& w : c.workloads)
      workloadNames_.insert(w.name);
    dryRunNow_ = c.daemon.dryRun;
  }

  static std::string okJson(const std::string& message) {
    return nlohmann::json{{"ok", true}, {"message", message}}.dump();
  }
  static std::string errorJson(const std::string& message) {
    return nlohmann::json{{"ok", false}, {"error", message}}.dump();
  }

  // One control request, on the control thread: never waits for the tick loop.
  std::string answer(const ControlRequest& r) {
    std::lock_guard<std::mutex> lock(controlMu_);
    if (!r.workload.empty() && !workloadNames_.count(r.workload)) {
      std::string names;
      for (const std::string& n : workloadNames_)
        names += (names.empty() ? "" : ", ") + n;
      return errorJson("no workload '" + r.workload + "' in the config (" +
                       (names.empty() ? "none" : names) + ")");
    }
    switch (r.verb) {
      case ControlRequest::Verb::Status:
        if (status_.empty()) return errorJson("no tick finished yet; ask again in a moment");
        return "{\"ok\":true,\"status\":" + statusWithHold(status_, wantedHold_) + "}";
      case ControlRequest::Verb::Pause:
        if (r.workload.empty()) {
          wantedHold_.all = true;
          log_.notice("paused by the operator: no page moves until tierctl resume");
          return okJson(
              "paused: tierd moves no pages from its next tick (sampling and metrics "
              "go on) until `tierctl resume`");
        }
        wantedHold_.workloads.insert(r.workload);
        log_.notice("workload '" + r.workload + "' paused by the operator");
        return okJson("paused workload '" + r.workload +
                      "': none of its pages move from the "
                      "next tick until `tierctl resume --workload " +
                      r.workload + "`");
      case ControlRequest::Verb::Resume:
        if (r.workload.empty()) {
          wantedHold_ = {};
          log_.notice("resumed by the operator: every workload is tiered");
          return okJson("resumed: every workload is tiered again from the next tick");
        }
        wantedHold_.workloads.erase(r.workload);
        wantedHold_.restore.erase(r.workload);
        log_.notice("workload '" + r.workload + "' resumed by the operator");
        return okJson("resumed workload '" + r.workload + "'" +
                      (wantedHold_.all ? " (tierd stays paused: `tierctl resume` for all)" : ""));
      case ControlRequest::Verb::Restore:
        if (dryRunNow_) return errorJson("a dry run moves no pages: nothing to restore");
        {
          const uint64_t request = ++restoreRequests_;
          wantedHold_.restore[r.workload] = request;
          log_.notice("workload '" + r.workload + "': restore asked by the operator");
          {
            std::lock_guard<std::mutex> wake(mu_);  // as the signal thread sets its flags
            wake_.store(true);
          }
          cv_.notify_all();
          return nlohmann::json{
              {"ok", true},
              {"request", request},
              {"message", "restoring workload '" + r.workload +
                              "': its pages move back to where its memory policy puts them, a "
                              "batch a tick (`tierctl status` shows how far); tierd moves none of "
                              "its pages otherwise until `tierctl resume --workload " +
                              r.workload + "`"}}
              .dump();
        }
    }
    return errorJson("unknown request");
  }

  // The holds the operator asked for, to the engine at the tick boundary.
  void applyOperatorHold() {
    OperatorHold hold;
    {
      std::lock_guard<std::mutex> lock(controlMu_);
      hold = wantedHold_;
    }
    if (hold != engine_->hold()) engine_->setHold(std::move(hold));
  }

  // The status document of the tick just done (`report`: null when it failed).
  void publishStatus(const TickReport* report) {
    if (!control_) return;
    StatusFacts f;
    f.pid = ::getpid();
    f.version = TIERD_VERSION;
    f.configPath = options_.configPath;
    f.tick = tickNo_;
    f.lastTickUnix = realtimeSeconds();
    f.intervalNs = engine_->config().daemon.intervalNs;
    f.dryRun = engine_->config().daemon.dryRun;
    f.source = sourceName_;
    f.sourceWhy = why_;
    f.hold = engine_->hold();
    f.report = report;
    f.restores = engine_->restores();
    f.totals = engine_->totals();
    f.conditions = conditions_.active();
    if (exporter_) {
      f.metricsListen = exporter_->address();
      f.exporterPid = exporter_->pid();
      f.exporterUid = exporter_->uid();
      f.exporterServing = exporter_->running();
    }
    for (const auto& [pid, source] : engine_->sources())
      f.pidWorkloads[pid] = engine_->workloadOf(pid);
    if (report)
      for (const SourceState& st : report->sourceStates)
        f.pidWorkloads[st.pid] = engine_->workloadOf(st.pid);
    std::string doc = statusDocument(f);
    std::lock_guard<std::mutex> lock(controlMu_);
    status_ = std::move(doc);
  }

  // SIGHUP: compiles the config file again aside; on errors the running config stays. Compiled
  // here on the tick loop: the compiler's limits (ConfigStore.h) bound the time it takes.
  void reloadIfAsked() {
    if (!reload_.exchange(false)) return;
    (void)notifier_->reloading();
    auto errors = store_->requestReload(options_.configPath);
    if (!errors.empty()) {
      printErrors(log_, errors, options_.configPath);
      log_.warning("reload failed; keeping the running config");
      metrics_->configReload(false);
      (void)notifier_->ready(statusText(tickNo_, engine_->config()));
    }
  }

  // A reloaded config swaps in at the tick boundary; what only a restart changes is said.
  void applyPendingConfig() {
    if (!store_->applyPending()) return;
    auto next = std::make_shared<policy::CompiledConfig>(*store_->current());
    if (options_.dryRun) next->daemon.dryRun = true;
    engine_->setConfig(next);
    noteConfig(*next);
    log_.setLevel(next->daemon.logLevel);
    metrics_->setWorkloads(*next);
    metrics_->configReload(true);
    if (next->daemon.metricsListen != initial_.daemon.metricsListen)
      log_.warning("daemon.metrics_listen changed: takes effect when tierd restarts");
    if (next->daemon.controlSocket != initial_.daemon.controlSocket)
      log_.warning("daemon.control_socket changed: takes effect when tierd restarts");
    if (next->daemon.metricsBasicAuthFile != initial_.daemon.metricsBasicAuthFile)
      log_.warning("daemon.metrics_basic_auth_file changed: takes effect when tierd restarts");
    if (next->sampling.source != initial_.sampling.source)
      log_.warning("sampling.source changed: takes effect when tierd restarts");
    log_.notice("config reloaded");
    (void)notifier_->ready(statusText(tickNo_, *next));
  }

  // One engine tick started at `startNs` (monotonic), due one `interval` later, then its
  // report, the engine's totals and vmstat published; the loop's CPU split into engine and
  // metrics time. Returns the wait until the next tick, ns (TickReport::nextIntervalNs:
  // daemon.settled_interval while settled; `interval` after a failed tick).
  uint64_t tick(uint64_t startNs, uint64_t interval) {
    {
      const double now = telemetry::threadCpuSeconds();
      metrics_->loopCpu("main", now - cpuMark_);
      cpuMark_ = now;
    }
    auto report = engine_->tick(startNs, static_cast<int64_t>(startNs + interval), &stop_);
    ++tickNo_;
    const double engineEnd = telemetry::threadCpuSeconds();
    const double wall = lastTickNs_ ? static_cast<double>(startNs - lastTickNs_) / 1e9
                                    : static_cast<double>(interval) / 1e9;
    lastTickNs_ = startNs;
    if (!report) {
      log_.error("tick " + std::to_string(tickNo_) + ": " + report.error().describe());
      metrics_->tickFailed();
    } else {
      publishReport(report.value(), wall, interval);
    }
    metrics_->totals(engine_->totals(), engine_->heat().recordStats().pingPongHeld);
    if (auto vm = sys::readVmstat(root_); vm) {
      metrics_->vmstat(vm.value());
    } else {
      log_.warning("vmstat: " + vm.error().describe());
      metrics_->metricsError(vm.error().code);
    }
    const uint64_t next =
        report && report->nextIntervalNs > interval ? report->nextIntervalNs : interval;
    metrics_->tickDone(report.ok(), realtimeSeconds());
    publishStatus(report ? &report.value() : nullptr);
    health_.tickDone(std::chrono::steady_clock::now(), std::chrono::nanoseconds(next), report.ok());
    cpuMark_ = telemetry::threadCpuSeconds();
    metrics_->loopCpu("metrics", cpuMark_ - engineEnd);
    return next;
  }

  static double realtimeSeconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }

  // A tick's report: its problems, scope changes and progress logged, its metrics set.
  void publishReport(const TickReport& report, double wallSeconds, uint64_t intervalNs) {
    for (const std::string& p : report.problems)
      log_.warning(p);
    for (const std::string& c : report.scopeChanges)
      log_.info(c);
    for (const ConditionLine& l :
         conditions_.update(report, engine_->config().workloads.size(), sourceName_)) {
      if (l.warning)
        log_.warning(l.text);
      else
        log_.notice(l.text);
    }
    if (wantsProgressLine(report, lastProgressNs_, report.nowNs,
                          engine_->config().daemon.progressIntervalNs)) {
      log_.info(progressLine(tickNo_, report, processCpuSeconds(), intervalNs));
      lastProgressNs_ = report.nowNs;
    }
    publishTopology(report.topology, *sink_);
    metrics_->migrateOffload(migrateOffloadCounters(report.topology.caps));
    metrics_->tick(report, snapshotSources(*engine_, root_), wallSeconds,
                   [this](pid_t pid) { return engine_->workloadOf(pid); });
  }

  // systemd: READY=1 after the first tick, a STATUS= line every tenth.
  void notifyService() {
    if (tickNo_ == 1) {
      if (Status s = notifier_->ready(statusText(tickNo_, engine_->config())); !s)
        log_.warning("sd_notify: " + s.error().describe());
    } else if (notifier_->enabled() && tickNo_ % 10 == 0) {
      (void)notifier_->status(statusText(tickNo_, engine_->config()));
    }
  }

  void petWatchdog() {
    if (!watchdogEvery_ || std::chrono::steady_clock::now() < nextWatchdog_) return;
    if (Status s = notifier_->watchdog(); !s) log_.warning("sd_notify: " + s.error().describe());
    nextWatchdog_ = std::chrono::steady_clock::now() + *watchdogEvery_;
  }

  // A settled wait of `waitNs` ending at `dueNs`: the sources that can pause sleep
  // (sampling.settled_damon_window, Engine::pauseSampling) until the lead before the tick, or a
  // signal; they are resumed before this returns, so every tick drains sampling sources.
  void waitPaused(uint64_t dueNs, uint64_t waitNs) {
    std::vector<std::string> problems;
    if (const uint64_t lead = engine_->pauseSampling(monotonicNs(), waitNs, problems); lead) {
      sleepUntil(dueNs - lead);
      engine_->resumeSampling(monotonicNs(), problems);
    }
    for (const std::string& p : problems)
      log_.warning(p);
  }

  // Sleeps until `dueNs` (monotonic) or a signal, pinging the watchdog when it is due meanwhile
  // and letting the sampling sources empty their kernel buffers every kCollectIntervalNs.
  void sleepUntil(uint64_t dueNs) {
    const auto now = std::chrono::steady_clock::now();
    const auto tickDue = now + std::chrono::nanoseconds(static_cast<int64_t>(dueNs) -
                                                        static_cast<int64_t>(monotonicNs()));
    const auto collectEvery = std::chrono::nanoseconds(telemetry::kCollectIntervalNs);
    auto nextCollect = now + collectEvery;
    std::unique_lock<std::mutex> lock(mu_);
    auto woken = [&] { return stop_.load() || reload_.load() || wake_.load(); };
    while (!woken() && std::chrono::steady_clock::now() < tickDue) {
      auto until = std::min(tickDue, nextCollect);
      if (watchdogEvery_) until = std::min(until, nextWatchdog_);
      cv_.wait_until(lock, until, woken);
      lock.unlock();
      petWatchdog();
      if (std::chrono::steady_clock::now() >= nextCollect) {
        engine_->collectSamples();
        nextCollect = std::chrono::steady_clock::now() + collectEvery;
      }
      lock.lock();
    }
  }

  void logTotals() {
    const EngineTotals& t = engine_->totals();
    char cpu[32];
    std::snprintf(cpu, sizeof cpu, "%.2f", processCpuSeconds());
    log_.notice("stopped after " + std::to_string(t.ticks) + " ticks: promoted " +
                formatBytes(t.promotedBytes) + ", demoted " + formatBytes(t.demotedBytes) + ", " +
                std::to_string(t.samples) + " samples, cpu " + cpu +
                " s (moved_bytes=" + std::to_string(t.promotedBytes + t.demotedBytes) + ")");
  }

  const DaemonOptions& options_;
  DaemonLog& log_;
  policy::CompileOptions compileOptions_;
  policy::CompiledConfig initial_;  // as compiled at start, with --dry-run applied
  std::optional<policy::ConfigStore> store_;
  std::optional<service::ServiceNotifier> notifier_;
  sys::SysRoot root_;
  std::unique_ptr<SignalWaiter> waiter_;
  // Read by the exporter's thread (/healthz); declared before sink_, which joins that thread.
  telemetry::LoopHealth health_;
  std::unique_ptr<telemetry::MetricsSink> sink_;
  // Declared after sink_: destroyed first, so its answering thread never renders a sink gone.
  std::unique_ptr<telemetry::ExporterProcess> exporter_;
  bool exporterGoneSaid_ = false;
  std::optional<DaemonMetrics> metrics_;
  std::optional<telemetry::SysRootDamonFs> damonFs_;
  std::optional<telemetry::LinuxPerfEventOpener> opener_;
  std::optional<telemetry::DamonPool> damonPool_;
  bool damonStatOff_ = false;  // prepareDamon() turned DAMON_STAT off: on again at the stop
  telemetry::SamplingProbe probe_;
  std::string why_;         // chooseSource's reason
  std::string sourceName_;  // "" when no source is available
  std::optional<Engine> engine_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reload_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  // Joined by its destructor, before `engine_` is destroyed, also when an exception unwinds.
  std::optional<SignalThread> signals_;
  // The loop's state (run()).
  std::optional<std::chrono::microseconds> watchdogEvery_;
  std::chrono::steady_clock::time_point nextWatchdog_;
  uint64_t tickNo_ = 0;
  uint64_t lastTickNs_ = 0;
  std::optional<uint64_t> lastProgressNs_;  // TickReport::nowNs of the last progress line
  ConditionLog conditions_;  // what keeps tierd from its job, said when it begins and ends
  // The control socket's side (Control.h), shared with its thread under controlMu_: the last
  // status document, the configured workload names, and the holds the operator asked for
  // (applied by the loop before each tick).
  std::mutex controlMu_;
  std::string status_;
  std::set<std::string> workloadNames_;
  bool dryRunNow_ = false;
  OperatorHold wantedHold_;
  uint64_t restoreRequests_ = 0;
  std::atomic<bool> wake_{false};  // a restore asked for: the loop ticks without waiting
  // Declared last: destroyed first, so its thread never sees the members above gone.
  std::unique_ptr<ControlServer> control_;
  double cpuMark_ = 0;
};

}  // namespace

int runDaemon(const DaemonOptions& options) {
  // Standard descriptors that were closed at exec are /dev/null from now on: otherwise the next
  // descriptors tierd opens (the exporter's socketpair, a socket) would take their numbers and
  // receive its log lines.
  for (;;) {
    const int fd = ::open("/dev/null", O_RDWR);  // the lowest free number
    if (fd < 0) break;
    if (fd > 2) {
      ::close(fd);
      break;
    }
  }
  DaemonLog log;
  // First, while this is the only thread: capabilities are per thread and inherited.
  if (options.dropCapabilities && ::geteuid() == 0 && !dropCapabilities(log)) return 1;
  Daemon daemon(options, log);
  if (!daemon.start()) return 1;
  return daemon.run();
}

}  // namespace tierd::daemon

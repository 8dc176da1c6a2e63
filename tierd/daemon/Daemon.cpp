#include "tierd/daemon/Daemon.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigStore.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/PerfEventOpener.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Engine.h"
#include "tierd/daemon/Signals.h"
#include "tierd/migrate/MovePagesMigrator.h"

namespace tierd::daemon {
namespace {

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

double processCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void printErrors(const std::vector<policy::ConfigError>& errors, const std::string& path) {
  for (const policy::ConfigError& e : errors)
    std::cerr << e.describe() << "\n";
  std::cerr << "tierd: " << path << ": " << errors.size() << " error"
            << (errors.size() == 1 ? "" : "s") << "\n";
}

migrate::MigratorConfig migratorConfig(const policy::CompiledConfig& c) {
  migrate::MigratorConfig m;
  m.callLatencyTargetNs = static_cast<int64_t>(c.migration.callLatencyTargetNs);
  m.promoteBytesPerSecond = c.migration.maxPromoteMiBPerS * kMiB;
  m.demoteBytesPerSecond = c.migration.maxDemoteMiBPerS * kMiB;
  return m;
}

// The source names that can sample one process, in the probe's order of preference.
std::string chooseSource(const policy::CompiledConfig& c, const telemetry::SamplingProbe& probe,
                         std::string& why) {
  auto available = [&](const std::string& name) {
    for (const auto& s : probe.sources)
      if (s.name == name) return s.available;
    return false;
  };
  switch (c.sampling.source) {
    case policy::SampleSource::Damon:
      why = "configured";
      return "damon-vaddr";
    case policy::SampleSource::Perf:
      why = "configured";
      for (const char* n : {"perf-pebs", "perf-ibs"})
        if (available(n)) return n;
      return "perf-pebs";
    case policy::SampleSource::Replay:
      why = "configured";
      return "replay";
    case policy::SampleSource::Auto:
      break;
  }
  // Per-process sources, best first: PEBS/IBS need a cgroup target, so a pid-selected workload
  // uses DAMON vaddr, then software page faults.
  for (const auto& s : probe.sources) {
    if (!s.available) continue;
    if (s.name == "damon-vaddr" || s.name == "perf-sw-page-faults") {
      why = s.why;
      return s.name;
    }
  }
  why = "no source available (tierctl sampling --probe)";
  return "";
}

// DAMON monitoring attributes for one process: DAMON's defaults (5 ms sampling, 100 ms
// aggregation, 10..1000 adaptive regions), tried regions read once per second. Measured in the
// rig (tests/vm/scenarios/tiering-gups): denser regions (min_nr_regions = size / 2 or 4 MiB) cost
// more kdamond and tierd CPU under emulation and converged more slowly; see the issue notes.
telemetry::DamonConfig damonConfigFor() {
  telemetry::DamonConfig c;
  c.sampleUs = 5000;
  c.aggrUs = 100000;
  c.updateUs = 1000000;
  c.minRegions = 10;
  c.maxRegions = 1000;
  c.snapshotNs = 1'000'000'000;
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
  return line + tail;
}

}  // namespace

int runDaemon(const DaemonOptions& options) {
  policy::CompileOutcome compiled = policy::compileConfigFile(options.configPath);
  if (!compiled.ok()) {
    printErrors(compiled.errors, options.configPath);
    return 1;
  }
  policy::CompiledConfig initial = *compiled.config;
  if (options.dryRun) initial.daemon.dryRun = true;
  policy::ConfigStore store(initial);

  sys::SysRoot root(options.sysRoot);
  auto waiter = SignalWaiter::create();
  if (!waiter) {
    std::cerr << "tierd: " << waiter.error().describe() << "\n";
    return 1;
  }

  telemetry::SysRootDamonFs damonFs(root);
  telemetry::LinuxPerfEventOpener opener;
  const telemetry::SamplingProbe probe = telemetry::probeSampling(root, damonFs, ::geteuid() == 0);
  std::string why;
  const std::string sourceName = chooseSource(initial, probe, why);
  std::cerr << "tierd: hotness source: " << (sourceName.empty() ? "none" : sourceName) << " ("
            << why << ")\n";
  SourceFactory factory =
      [&](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
    if (sourceName.empty()) return Error::env(why, "sampling");
    telemetry::SamplingTarget target;
    target.pid = pid;
    return telemetry::makeSource(sourceName, probe, target, opener, damonFs, root,
                                 damonConfigFor());
  };

  Engine engine(root,
                std::make_unique<migrate::MovePagesMigrator>(migratorConfig(initial),
                                                             migrate::makeLinuxPageSystem(root)),
                factory, ::getpid(), store.current());

  // The signal thread: SIGTERM/SIGINT set `stop` (checked by the migrator between calls),
  // SIGHUP sets `reload`; both wake the main loop.
  std::atomic<bool> stop{false};
  std::atomic<bool> reload{false};
  std::atomic<bool> quit{false};
  std::mutex mu;
  std::condition_variable cv;
  std::thread signals([&] {
    while (!quit.load()) {
      Wake w = waiter.value()->wait(100);
      if (w == Wake::Tick) continue;
      {
        std::lock_guard<std::mutex> lock(mu);
        (w == Wake::Stop ? stop : reload).store(true);
      }
      cv.notify_all();
    }
  });

  std::cerr << "tierd: running with " << options.configPath << " ("
            << store.current()->workloads.size() << " workloads, tick "
            << store.current()->daemon.intervalNs / 1'000'000 << " ms"
            << (store.current()->daemon.dryRun ? ", dry run" : "") << ")\n";
  int rc = 0;
  uint64_t tickNo = 0;
  while (!stop.load()) {
    if (reload.exchange(false)) {
      auto errors = store.requestReload(options.configPath);
      if (!errors.empty()) {
        printErrors(errors, options.configPath);
        std::cerr << "tierd: reload failed; keeping the running config\n";
      }
    }
    if (store.applyPending()) {
      auto next = std::make_shared<policy::CompiledConfig>(*store.current());
      if (options.dryRun) next->daemon.dryRun = true;
      engine.setConfig(next);
      std::cerr << "tierd: config reloaded\n";
    }
    const uint64_t start = monotonicNs();
    const uint64_t interval = engine.config().daemon.intervalNs;
    auto report = engine.tick(start, static_cast<int64_t>(start + interval), &stop);
    ++tickNo;
    if (!report) {
      std::cerr << "tierd: tick " << tickNo << ": " << report.error().describe() << "\n";
    } else {
      for (const std::string& p : report->problems)
        std::cerr << "tierd: " << p << "\n";
      std::cerr << "tierd: " << progressLine(tickNo, report.value(), processCpuSeconds()) << "\n";
    }
    if (options.once || (options.ticks && tickNo >= *options.ticks)) break;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_until(lock,
                  std::chrono::steady_clock::now() +
                      std::chrono::nanoseconds(start + interval - monotonicNs()),
                  [&] { return stop.load() || reload.load(); });
  }
  quit.store(true);
  signals.join();
  engine.shutdown();
  const EngineTotals& t = engine.totals();
  std::cerr << "tierd: stopped after " << t.ticks << " ticks: promoted "
            << formatBytes(t.promotedBytes) << ", demoted " << formatBytes(t.demotedBytes) << ", "
            << t.samples << " samples, cpu " << processCpuSeconds()
            << " s (moved_bytes=" << t.promotedBytes + t.demotedBytes << ")\n";
  return rc;
}

}  // namespace tierd::daemon

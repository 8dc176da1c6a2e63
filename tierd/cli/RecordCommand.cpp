// tierctl record: capture a sample trace (docs/trace-format.md) with the best available source.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <iostream>

#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "telemetry/hotness/SourceNames.h"
#include "telemetry/hotness/Trace.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/Sampling.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Clock.h"
#include "tierd/sys/Parsers.h"

namespace tierd::cli {

Result<StartedSource> startBestSource(const telemetry::SamplingProbe& probe,
                                      const telemetry::SamplingTarget& target,
                                      const std::string& only, telemetry::PerfEventOpener& opener,
                                      telemetry::DamonFs& fs, const sys::SysRoot& root,
                                      std::ostream& log, const telemetry::DamonConfig& damon,
                                      telemetry::DamonPool* damonPool,
                                      const telemetry::PerfTuning& perf) {
  std::string reasons;
  for (const auto& s : probe.sources) {
    if (!only.empty() && s.name != only) continue;
    if (!s.available) {
      if (!only.empty()) return Error::env(s.name + " is not available: " + s.why, "sampling");
      continue;
    }
    if (telemetry::sourceKindOf(s.name) == telemetry::SourceKind::DamonVaddr && target.pid == 0) {
      log << "skipping damon-vaddr: it monitors a pid, not a cgroup\n";
      continue;
    }
    auto src =
        telemetry::makeSource(s.name, probe, target, opener, fs, root, damon, perf, damonPool);
    if (!src) return src.error();
    if (auto st = src.value()->start(); !st) {
      log << "cannot start " << s.name << ": " << st.error().describe() << "\n";
      reasons += s.name + ": " + st.error().message + "; ";
      continue;
    }
    StartedSource out;
    out.source = std::move(src.value());
    for (const auto& e : s.events)
      out.events.push_back(e);
    return out;
  }
  return Error::env(
      "no hotness source could be started (" + reasons + "see tierctl sampling --probe)",
      "sampling");
}

namespace {
std::atomic<bool> gStop{false};
struct sigaction gOldInt, gOldTerm;
extern "C" void onStopSignal(int) {
  gStop.store(true);
}
}  // namespace

telemetry::DamonPoolConfig tierctlDamonPool(const sys::SysRoot& root) {
  telemetry::DamonPoolConfig c;
  c.capacity = 1;
  c.ownerFile = root.path("/run/tierd/damon.owner");
  c.selfPid = ::getpid();
  if (auto self = root.read("/proc/self/stat"))
    c.selfStartTime = sys::parseStatStartTime(self.value(), "/proc/self/stat").valueOr(0);
  return c;
}

StopOnSignals::StopOnSignals() {
  gStop.store(false);
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: nanosleep returns at once
  ::sigaction(SIGINT, &sa, &gOldInt);
  ::sigaction(SIGTERM, &sa, &gOldTerm);
}

StopOnSignals::~StopOnSignals() {
  ::sigaction(SIGINT, &gOldInt, nullptr);
  ::sigaction(SIGTERM, &gOldTerm, nullptr);
}

const std::atomic<bool>& StopOnSignals::stopRequested() {
  return gStop;
}

int recordCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl record",
      "usage: tierctl record --cgroup PATH|--pid PID --seconds N --out FILE\n\nRecords access "
      "samples with the best available source.\n",
      {
          {"cgroup", true, "record the processes of this perf_event cgroup directory", "PATH"},
          {"pid", true, "or one process", "PID"},
          {"seconds", true, "how long to record (default 10)", "N"},
          {"out", true, "trace file to write (docs/trace-format.md)", "FILE"},
          {"source", true, "force a source (perf-pebs, perf-ibs, damon-vaddr, perf-sw-page-faults)",
           "NAME"},
          {"interval-ms", true, "drain interval in milliseconds (default 100)", "MS"},
          kSysRootOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  telemetry::SamplingTarget target;
  target.cgroupPath = parsed->get("cgroup").value_or("");
  if (parsed->has("pid")) {
    auto pid = parsed->pid("pid");
    if (!pid) return fail(spec, pid.error(), 2);
    target.pid = pid.value();
  }
  if (target.cgroupPath.empty() == (target.pid == 0) || !parsed->has("out")) {
    std::cerr << "tierctl record: give exactly one of --cgroup PATH or --pid PID, and --out FILE\n";
    return 2;
  }
  // Seconds and milliseconds up to 2^32: their nanoseconds stay far inside 64 bits.
  auto seconds = parsed->integer("seconds", 10, 0, 1ull << 32);
  if (!seconds) return fail(spec, seconds.error(), 2);
  auto intervalMs = parsed->integer("interval-ms", 100, 1, 1ull << 32);
  if (!intervalMs) return fail(spec, intervalMs.error(), 2);
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  telemetry::SysRootDamonFs fs(root);
  telemetry::LinuxPerfEventOpener opener;
  auto probe = telemetry::probeSampling(root, fs, ::geteuid() == 0);
  // Before the source starts: a signal from now on stops it cleanly (its kdamond removed).
  StopOnSignals signals;
  telemetry::DamonPool pool(fs, tierctlDamonPool(root));
  auto started = startBestSource(probe, target, parsed->get("source").value_or(""), opener, fs,
                                 root, std::cerr, {}, &pool);
  if (!started) {
    return fail(spec, started.error(), 1);
  }
  auto& src = *started->source;
  auto* perf = dynamic_cast<telemetry::PerfSampler*>(&src);
  const std::string outPath = *parsed->get("out");
  std::ofstream out(outPath);
  if (!out) {
    std::cerr << "tierctl record: cannot write " << outPath << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  telemetry::TraceHeader h;
  h.source = src.name();
  h.events = started->events;
  h.samplePeriod = perf ? perf->period() : 0;
  h.topology = telemetry::topologyFingerprint(root).valueOr("unknown");
  telemetry::writeTraceHeader(out, h);
  const uint64_t t0 = monotonicNs();
  const uint64_t end = t0 + seconds.value() * 1000000000u;
  int status = 0;
  for (;;) {
    const uint64_t now = monotonicNs();
    auto batch = src.drain(now);
    if (!batch) {
      std::cerr << "tierctl record: " << batch.error().describe() << "\n";
      status = 1;
      break;
    }
    telemetry::writeTraceSamples(out, batch.value());
    if (now >= end || StopOnSignals::stopRequested().load()) break;
    const uint64_t sleepNs = std::min<uint64_t>(intervalMs.value() * 1000000u, end - now);
    timespec ts{static_cast<time_t>(sleepNs / 1000000000u),
                static_cast<long>(sleepNs % 1000000000u)};
    ::nanosleep(&ts, nullptr);
  }
  src.stop();
  out.flush();
  const auto st = src.stats();
  std::cout << "recorded " << st.samples << " samples from " << src.name() << " in "
            << seconds.value() << " s to " << outPath << " (lost " << st.lost << ", throttled "
            << st.throttled << ", discarded " << st.discarded;
  if (perf)
    std::cout << ", sample period " << perf->period() << ", overhead " << perf->overhead() * 100
              << "% of a core";
  std::cout << ")\n";
  if (!out) {
    std::cerr << "tierctl record: write to " << outPath << " failed\n";
    return 1;
  }
  return status;
}

}  // namespace tierd::cli

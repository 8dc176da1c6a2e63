#include "tierd/daemon/Tuning.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "telemetry/hotness/Trace.h"
#include "telemetry/metrics/ExporterProcess.h"
#include "tierd/core/Units.h"

namespace tierd::daemon {

migrate::MigrationLimits migrationLimits(const policy::CompiledConfig& c) {
  migrate::MigrationLimits l;
  l.callLatencyTargetNs = static_cast<int64_t>(c.migration.callLatencyTargetNs);
  l.promoteBytesPerSecond = c.migration.maxPromoteMiBPerS * kMiB;
  l.demoteBytesPerSecond = c.migration.maxDemoteMiBPerS * kMiB;
  return l;
}

migrate::MigratorConfig migratorConfig(const policy::CompiledConfig& c) {
  migrate::MigratorConfig m;
  const migrate::MigrationLimits l = migrationLimits(c);
  m.callLatencyTargetNs = l.callLatencyTargetNs;
  m.promoteBytesPerSecond = l.promoteBytesPerSecond;
  m.demoteBytesPerSecond = l.demoteBytesPerSecond;
  return m;
}

telemetry::ExporterOptions exporterOptions(const policy::CompiledConfig& c) {
  telemetry::ExporterOptions o;
  o.listenAddress = c.daemon.metricsListen;
  o.basicAuthFile = c.daemon.metricsBasicAuthFile;
  o.user = c.daemon.metricsUser;
  return o;
}

std::vector<std::string> exporterStartProblems(const policy::CompiledConfig& c) {
  std::vector<std::string> problems;
  if (c.daemon.metricsListen.empty()) return problems;  // the exporter is off
  if (auto hp = telemetry::parseListenAddress(c.daemon.metricsListen); !hp)
    problems.push_back("daemon.metrics_listen: " + hp.error().describe());
  if (!c.daemon.metricsBasicAuthFile.empty())
    if (auto creds = telemetry::readBasicAuthFile(c.daemon.metricsBasicAuthFile); !creds)
      problems.push_back("daemon.metrics_basic_auth_file: " + creds.error().describe());
  if (::geteuid() == 0)
    if (auto who = telemetry::exporterUser(c.daemon.metricsUser); !who)
      problems.push_back("daemon.metrics_user: " + who.error().describe());
  return problems;
}

std::string checkReplayTrace(const std::string& path) {
  // One descriptor, opened without blocking: a FIFO or device named as the trace is refused
  // unread (it would hang the compile, or never end it; for a reload, on the tick loop).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Error::fromErrno("cannot read the trace", path).describe();
  struct stat st {};
  std::string text;
  Status read = Ok{};
  if (::fstat(fd, &st) != 0) {
    read = Error::fromErrno("cannot read the trace", path);
  } else if (!S_ISREG(st.st_mode)) {
    read = Error::env("the trace is not a regular file", path);
  } else {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
      text.append(buf, static_cast<size_t>(n));
    if (n < 0) read = Error::fromErrno("cannot read the trace", path);
  }
  ::close(fd);
  if (!read) return read.error().describe();
  auto t = telemetry::parseTrace(text, path);
  return t ? "" : t.error().describe();
}

policy::CompileOptions daemonCompileOptions() {
  policy::CompileOptions o;
  o.trustedUid = ::geteuid();
  o.checkTrace = checkReplayTrace;
  return o;
}

telemetry::PerfTuning perfTuning(const policy::CompiledConfig& c) {
  telemetry::PerfTuning t;
  t.samplePeriod = c.sampling.samplePeriod;
  t.cpuBudget = c.sampling.cpuBudgetPercent / 100.0;
  return t;
}

// DAMON monitoring attributes for one process: 2 ms sampling to start with (at DAMON's default
// 5 ms every cold 2 MiB THP of a fast GUPS was seen accessed in every check, so all regions
// looked equally hot; tests/vm/scenarios/hotness needed 2 ms too), then adapted to the access
// ratio; 100 ms aggregation; 100..1000 adaptive regions (DAMON's own default bound,
// Documentation/mm/damon/design.rst "Adaptive Target Regions Adjustment": regions merge and split
// with the access pattern, so the bound caps the kdamond's work, not the memory it watches; a
// process is watched as about half of it, and a hot set in N pieces needs about 2N: at 500 a GUPS
// kdamond used 25% less CPU and only 86% of a hot set of 205 scattered 2 MiB chunks ever reached
// the fast tier); region counts read once per second, through the damon:damon_aggregated
// tracepoint where tracefs offers it, else a stat scheme's tried regions. The tracepoint reads
// every aggregation from one pipe; tried regions make the kdamond build a sysfs directory per
// region that tierd then reads three files of (~130 regions of redis-server: 200-330 ms of tierd's
// CPU per tick under QEMU TCG, against 7-80 ms for the tracepoint on GUPS). Denser
// regions (min_nr_regions = size / 2 or 4 MiB) cost more kdamond and tierd CPU under emulation and
// converged more slowly; tried again for a fleet of three 512 MiB GUPS (one region per 2 MiB, up to
// 500): the hottest chunk still read only ~2x its process's mean heat, and under load two of the
// three kdamonds gave one snapshot in 150 s.
telemetry::DamonConfig damonTuning(const policy::CompiledConfig& config) {
  telemetry::DamonConfig c;
  c.sampleUs = 2000;
  c.aggrUs = 100000;
  c.updateUs = 1000000;
  c.minRegions = 100;
  c.maxRegions = 1000;
  c.snapshotNs = 1'000'000'000;
  // A fast workload touches its cold pages within any fixed interval (docs/tiering.md):
  // keep the share of checks that see an access between 5% and 30% so hot and cold stay apart.
  c.adaptiveSampling = true;
  c.minSampleUs = 500;
  // sampling.max_sample_interval (default 20 ms); never under the lower bound.
  c.maxSampleUs = std::max<uint64_t>(c.minSampleUs, config.sampling.maxSampleIntervalNs / 1000);
  // The kdamond's CPU is sampling cost: held to the budget (DamonSource, "CPU budget").
  c.cpuBudget = config.sampling.cpuBudgetPercent / 100.0;
  // Once the plan has been empty for a while (Engine::kSettleTicks), the settled budget.
  c.settledCpuBudget = config.sampling.settledCpuBudgetPercent / 100.0;
  c.clockTicksPerSecond = static_cast<uint64_t>(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  c.read = telemetry::DamonReadPath::Tracepoint;  // falls back to tried regions, saying why
  return c;
}

}  // namespace tierd::daemon

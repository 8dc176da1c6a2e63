#include "tierd/daemon/Tuning.h"

#include "telemetry/hotness/Trace.h"
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
  return o;
}

std::string checkReplayTrace(const std::string& path) {
  Status s = telemetry::checkTraceFile(path);
  return s ? "" : s.error().describe();
}

telemetry::PerfTuning perfTuning(const policy::CompiledConfig& c) {
  telemetry::PerfTuning t;
  t.samplePeriod = c.sampling.samplePeriod;
  t.cpuBudget = c.sampling.cpuBudgetPercent / 100.0;
  return t;
}

}  // namespace tierd::daemon

#include "telemetry/metrics/MigrationMeter.h"

#include <cerrno>

namespace tierd::telemetry {

std::string migrateResultLabel(int err) {
  if (err < 0) err = -err;
  switch (err) {
    case EBUSY:
      return "busy";
    case ENOENT:
    case EFAULT:
    case ESRCH:
      return "gone";
    case EACCES:
    case EPERM:
      return "denied";
    case ENOMEM:
      return "no_memory";
    default:
      return "failed";
  }
}

void MigrationMeter::record(const MovePagesCallStats& call, MetricsSink& sink) {
  const std::string dir = directionLabel(call.direction);
  const std::string ps = pageSizeLabel(call.pageSize);
  const double pageBytes = static_cast<double>(call.pageSize);
  auto pages = [&](const std::string& result, uint64_t n) {
    if (n == 0) return;
    sink.add(metric::kMigratePages, {dir, ps, result}, static_cast<double>(n));
    sink.add(metric::kMigrateBytes, {dir, ps, result}, static_cast<double>(n) * pageBytes);
  };
  pages("moved", call.movedPages);
  pages("already_placed", call.alreadyPlaced);
  for (const auto& [err, n] : call.errorPages) {
    pages(migrateResultLabel(err), n);
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(err)}, static_cast<double>(n));
  }
  if (call.callErrno != 0)
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(call.callErrno)}, 1);
  sink.observe(metric::kMigrateCallDuration, {dir}, call.wallSeconds);
  sink.add(metric::kMigrateSystemCpu, {dir}, call.systemCpuSeconds);

  const double moved = static_cast<double>(call.movedPages) * pageBytes;
  if (!call.workload.empty() && call.movedPages > 0)
    sink.add(metric::kWorkloadMigratedBytes, {call.workload, dir}, moved);
  Totals& t = tick_[call.direction];
  t.movedBytes += moved;
  t.callSeconds += call.wallSeconds;
  CpuWindow& c = cpu_[call.direction];
  c.movedBytes += moved;
  c.systemCpuSeconds += call.systemCpuSeconds;
}

void MigrationMeter::endTick(MetricsSink& sink) {
  for (const auto& [d, t] : tick_) {
    if (t.movedBytes <= 0 || t.callSeconds <= 0) continue;
    sink.set(metric::kMigrateCopyThroughput, {directionLabel(d)}, t.movedBytes / t.callSeconds);
  }
  tick_.clear();
  for (auto& [d, c] : cpu_) {
    if (c.movedBytes < static_cast<double>(kMinBytesForCpuPerGib)) continue;
    const double gib = c.movedBytes / static_cast<double>(1ULL << 30);
    sink.set(metric::kMigrateSystemCpuPerGib, {directionLabel(d)}, c.systemCpuSeconds / gib);
    c = CpuWindow{};
  }
}

}  // namespace tierd::telemetry

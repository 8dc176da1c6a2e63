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
  pages(moveOutcomeInfo(MoveOutcome::AlreadyThere).metricLabel, call.alreadyThere);
  for (const auto& [err, n] : call.errorPages) {
    pages(migrateResultLabel(err), n);
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(err)}, static_cast<double>(n));
  }
  if (call.callErrno != 0)
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(call.callErrno)}, 1);
  sink.observe(metric::kMigrateCallDuration, {dir}, call.wallSeconds);
  sink.add(metric::kMigrateSystemCpu, {dir}, call.systemCpuSeconds);

  if (!call.workload.empty() && call.movedPages > 0)
    sink.add(metric::kWorkloadMigratedBytes, {call.workload, dir},
             static_cast<double>(call.movedPages) * pageBytes);
}

std::string outcomeResultLabel(MoveOutcome o) {
  return static_cast<size_t>(o) < kMoveOutcomes.size() ? moveOutcomeInfo(o).metricLabel : "";
}

void MigrationMeter::recordBatch(const BatchResult& batch,
                                 const std::function<std::string(pid_t)>& workloadOf,
                                 MetricsSink& sink) {
  for (const RangeResult& r : batch.ranges) {
    const Direction d = r.range.direction;
    const std::string dir = directionLabel(d);
    const uint64_t moved = r.outcomes[MoveOutcome::Moved];
    uint64_t unit = r.range.pageSize;
    if (moved > 0 && r.bytesMoved % moved == 0) unit = r.bytesMoved / moved;
    const std::string ps = pageSizeLabel(unit);
    for (size_t i = 0; i < kMoveOutcomeCount; ++i) {
      const auto o = static_cast<MoveOutcome>(i);
      const uint64_t n = r.outcomes[o];
      const std::string result = outcomeResultLabel(o);
      if (n == 0 || result.empty()) continue;
      const double bytes = o == MoveOutcome::Moved ? static_cast<double>(r.bytesMoved)
                                                   : static_cast<double>(n) * double(unit);
      sink.add(metric::kMigratePages, {dir, ps, result}, static_cast<double>(n));
      sink.add(metric::kMigrateBytes, {dir, ps, result}, bytes);
    }
    if (r.bytesMoved > 0 && workloadOf) {
      const std::string w = workloadOf(r.range.pid);
      if (!w.empty())
        sink.add(metric::kWorkloadMigratedBytes, {w, dir}, static_cast<double>(r.bytesMoved));
    }
  }
  const MigrationStats& st = batch.stats;
  for (const auto& [err, n] : st.errnoPages)
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(err)}, static_cast<double>(n));
  for (const auto& [err, n] : st.errnoCalls)
    sink.add(metric::kDaemonErrors, {"migrate", errnoLabel(err)}, static_cast<double>(n));

  // Per move call: its latency and kernel CPU for its direction. Rate-budget waits,
  // busy back-offs, planning reads (smaps, pagemap) and status queries are outside every call.
  std::map<Direction, double> callCpu;
  for (const MoveCallRecord& c : st.moveCallRecords) {
    const double wall = static_cast<double>(c.wallNs) / 1e9;
    sink.observe(metric::kMigrateCallDuration, {directionLabel(c.direction)}, wall);
    callCpu[c.direction] += static_cast<double>(c.kernelCpuNs) / 1e9;
  }
  for (const auto& [d, cpu] : callCpu)
    sink.add(metric::kMigrateSystemCpu, {directionLabel(d)}, cpu);
}

}  // namespace tierd::telemetry

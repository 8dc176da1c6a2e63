#pragma once
/// \file
/// MigrationMeter: turns what one move_pages(2) call did into the migration metrics, so the
/// migrator reports each call once and the label mapping (direction, page size, per-page result,
/// errno) lives in one place. Per call: tierd_migrate_pages_total / _bytes_total by result,
/// tierd_migrate_call_duration_seconds, tierd_migrate_system_cpu_seconds_total and
/// tierd_daemon_errors_total{component="migrate"}. Copy throughput and system CPU per GiB are
/// PromQL over these counters (docs/metrics.md), so every figure is cumulative.
///
/// Two ways in: record() per move_pages(2) call, for a caller that has one call's statuses; and
/// recordBatch() per Migrator::execute batch (BatchResult: per-range outcomes plus one
/// MoveCallRecord per move call). What recordBatch() takes exactly is written at its declaration.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "telemetry/metrics/MetricsSink.h"
#include "tierd/core/Migration.h"
#include "tierd/core/Types.h"

namespace tierd::telemetry {

/// What one move_pages(2) call did. Page counts are in pages of `pageSize`.
struct MovePagesCallStats {
  Direction direction = Direction::Promote;
  std::string workload;                ///< configured workload the pages belong to; "" if none
  uint64_t pageSize = 0;               ///< bytes: base page, 2 MiB THP or hugetlb size
  double wallSeconds = 0;              ///< CLOCK_MONOTONIC around the call
  double systemCpuSeconds = 0;         ///< getrusage(RUSAGE_THREAD) ru_stime delta around the call
  uint64_t movedPages = 0;             ///< status[i] == target node after the call
  uint64_t alreadyThere = 0;           ///< pages that were on the target node before the call
  std::map<int, uint64_t> errorPages;  ///< positive errno from status[i] (-EBUSY...) -> pages
  int callErrno = 0;  ///< errno when move_pages itself returned -1 (then no page moved)
};

/// The `result` label of a negative move_pages status (per-page errno, given positive):
/// EBUSY -> busy; ENOENT, EFAULT, ESRCH -> gone; EACCES, EPERM -> denied; ENOMEM -> no_memory;
/// anything else -> failed (the per-page status errnos of move_pages(2)).
std::string migrateResultLabel(int err);

/// The `result` label of a migrator outcome: its kMoveOutcomes metricLabel
/// (tierd/core/Migration.h): Moved -> moved, AlreadyThere -> already_there,
/// Busy/Gone/Denied/NoMemory -> busy/gone/denied/no_memory, NodeNotAllowed -> node_not_allowed,
/// NotMigrated/OtherError -> failed; "" for NotPresent and NotAttempted (no page was moved or
/// refused: nothing to count).
std::string outcomeResultLabel(MoveOutcome o);

class MigrationMeter {
 public:
  /// Reports one call. Thread: the migrating thread (the tick loop).
  void record(const MovePagesCallStats& call, MetricsSink& sink);

  /// Reports one Migrator::execute batch. `workloadOf` names the configured workload of a pid
  /// ("" = none). Exact: pages by direction, page size and result (from each RangeResult's
  /// outcome counts), bytes moved (RangeResult::bytesMoved), errors by errno
  /// (MigrationStats::errnoPages per page, errnoCalls per failed call), workload bytes moved, and
  /// per move call (MigrationStats::moveCallRecords, one direction each): one call-latency
  /// observation (its wall time; the histogram's _sum is the time inside calls) and its kernel
  /// CPU towards tierd_migrate_system_cpu_seconds_total. Rate-budget
  /// sleeps, busy back-offs, planning reads and status queries are in no call, so in none of
  /// these. Derived: the page size of a range is bytesMoved / moved pages when pages moved (the
  /// unit the migrator really used), else the planned MoveRange::pageSize; bytes of unmoved
  /// results are pages times that size.
  void recordBatch(const BatchResult& batch, const std::function<std::string(pid_t)>& workloadOf,
                   MetricsSink& sink);
};

}  // namespace tierd::telemetry

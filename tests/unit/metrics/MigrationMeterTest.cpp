#include <doctest/doctest.h>

#include <cerrno>

#include "telemetry/metrics/CpuTime.h"
#include "telemetry/metrics/MigrationMeter.h"

using namespace tierd::telemetry;

TEST_CASE("per-page statuses map to the fixed result labels") {
  CHECK(migrateResultLabel(EBUSY) == "busy");
  CHECK(migrateResultLabel(-ENOENT) == "gone");
  CHECK(migrateResultLabel(EFAULT) == "gone");
  CHECK(migrateResultLabel(EACCES) == "denied");
  CHECK(migrateResultLabel(EPERM) == "denied");
  CHECK(migrateResultLabel(ENOMEM) == "no_memory");
  CHECK(migrateResultLabel(EXDEV) == "failed");
}

TEST_CASE("MigrationMeter reports each call in counters and the latency histogram") {
  RecordingSink s;
  s.setWorkloads({"redis"});
  MigrationMeter m;
  MovePagesCallStats call;
  call.direction = tierd::Direction::Promote;
  call.workload = "redis";
  call.pageSize = 2ULL << 20;
  call.wallSeconds = 0.02;
  call.systemCpuSeconds = 0.015;
  call.movedPages = 16;  // 32 MiB
  call.alreadyThere = 2;
  call.errorPages = {{EBUSY, 3}, {ENOMEM, 1}};
  m.record(call, s);
  CHECK(s.rejectedUpdates() == 0);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "moved"}) == 16);
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) == 32 << 20);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "already_there"}) == 2);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "busy"}) == 3);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "no_memory"}) == 1);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "EBUSY"}) == 3);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "ENOMEM"}) == 1);
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"promote"}) == 1);
  CHECK(s.value("tierd_workload_migrated_bytes_total", {"redis", "promote"}) == 32 << 20);
  // Copy throughput and CPU per GiB come from counters in PromQL: 32 MiB in 0.02 s of call
  // time and 0.015 s of system CPU.
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"promote"}) == doctest::Approx(0.02));
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"promote"}) ==
        doctest::Approx(call.systemCpuSeconds));
  m.record(call, s);
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) == 64 << 20);
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"promote"}) ==
        doctest::Approx(2 * call.systemCpuSeconds));

  MovePagesCallStats failed;
  failed.direction = tierd::Direction::Demote;
  failed.pageSize = 4096;
  failed.callErrno = ESRCH;
  m.record(failed, s);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "ESRCH"}) == 1);
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"demote"}) == 0);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("recordBatch: exact page counts by result, latency, throughput and CPU per move call") {
  RecordingSink s;
  s.setWorkloads({"redis"});
  MigrationMeter m;
  tierd::BatchResult b;
  tierd::RangeResult up;  // 8 THPs promoted, 2 busy, 1 already there, 3 not present
  up.range = {100, 0x200000, 16ULL << 21, 2ULL << 20, 0, tierd::Direction::Promote};
  up.outcomes[tierd::MoveOutcome::Moved] = 8;
  up.outcomes[tierd::MoveOutcome::Busy] = 2;
  up.outcomes[tierd::MoveOutcome::AlreadyThere] = 1;
  up.outcomes[tierd::MoveOutcome::NotPresent] = 3;
  up.bytesMoved = 8ULL << 21;
  tierd::RangeResult down;  // planned as THP, moved as base pages: 1024 x 4k = 4 MiB
  down.range = {200, 0x400000, 4ULL << 20, 2ULL << 20, 1, tierd::Direction::Demote};
  down.outcomes[tierd::MoveOutcome::Moved] = 1024;
  down.outcomes[tierd::MoveOutcome::OtherError] = 1;
  down.bytesMoved = 4ULL << 20;
  b.ranges = {up, down};
  b.stats.errnoPages = {{EBUSY, 2}, {EINVAL, 1}};
  b.stats.errnoCalls = {{ESRCH, 1}};
  // Three move calls; the batch's wall time (40 ms) also holds a rate-budget sleep and the
  // status queries, which are in no call.
  b.stats.moveCalls = 3;
  b.stats.moveCallRecords = {{tierd::Direction::Promote, 10'000'000, 6'000'000, 12ULL << 21},
                             {tierd::Direction::Demote, 4'000'000, 2'000'000, 4ULL << 20},
                             {tierd::Direction::Promote, 6'000'000, 4'000'000, 2ULL << 21}};
  b.stats.maxCallNs = 10'000'000;
  b.stats.wallNs = 40'000'000;
  b.stats.kernelCpuNs = 20'000'000;
  m.recordBatch(
      b, [](pid_t pid) { return pid == 100 ? std::string("redis") : std::string(); }, s);
  CHECK(s.rejectedUpdates() == 0);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "moved"}) == 8);
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) == 16 << 20);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "busy"}) == 2);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "already_there"}) == 1);
  CHECK(s.seriesCount("tierd_migrate_pages_total") == 5);  // not-present pages are not counted
  CHECK(s.value("tierd_migrate_pages_total", {"demote", "4k", "moved"}) == 1024);
  CHECK(s.value("tierd_migrate_bytes_total", {"demote", "4k", "failed"}) == 4096);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "EBUSY"}) == 2);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "EINVAL"}) == 1);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "ESRCH"}) == 1);
  CHECK(s.value("tierd_workload_migrated_bytes_total", {"redis", "promote"}) == 16 << 20);
  // Kernel CPU of each direction's calls, not the batch's split by bytes.
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"promote"}) == doctest::Approx(0.010));
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"demote"}) == doctest::Approx(0.002));
  // One observation per move_pages(2) call, under the call's own direction.
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"promote"}) == 2);
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"promote"}) == doctest::Approx(0.016));
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"demote"}) == 1);
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"demote"}) == doctest::Approx(0.004));
  // Bytes moved per second inside the calls, as PromQL computes it (bytes moved / the
  // histogram's _sum): 16 MiB in 16 ms up, 4 MiB in 4 ms down.
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) /
            s.value("tierd_migrate_call_duration_seconds", {"promote"}) ==
        doctest::Approx(double(16 << 20) / 0.016));
  CHECK(outcomeResultLabel(tierd::MoveOutcome::NotAttempted).empty());
  CHECK(outcomeResultLabel(tierd::MoveOutcome::NoMemory) == "no_memory");
}

TEST_CASE("thread CPU clocks advance with work") {
  const double c0 = threadCpuSeconds();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i)
    x = x + i * 0.5;
  CHECK(threadCpuSeconds() > c0);
  auto sys = threadSystemCpuSeconds();
  REQUIRE(sys.ok());
  CHECK(*sys >= 0);
}

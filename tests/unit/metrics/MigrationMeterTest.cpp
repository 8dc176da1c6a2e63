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

TEST_CASE("MigrationMeter reports each call and the per-tick gauges") {
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
  call.alreadyPlaced = 2;
  call.errorPages = {{EBUSY, 3}, {ENOMEM, 1}};
  m.record(call, s);
  CHECK(s.rejectedUpdates() == 0);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "moved"}) == 16);
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) == 32 << 20);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "already_placed"}) == 2);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "busy"}) == 3);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "no_memory"}) == 1);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "EBUSY"}) == 3);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "ENOMEM"}) == 1);
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"promote"}) == 1);
  CHECK(s.value("tierd_workload_migrated_bytes_total", {"redis", "promote"}) == 32 << 20);
  m.endTick(s);
  // 32 MiB in 0.02 s of call time
  CHECK(s.value("tierd_migrate_copy_throughput_bytes_per_second", {"promote"}) ==
        doctest::Approx(double(32 << 20) / 0.02));
  // below 64 MiB: no CPU-per-GiB figure yet
  CHECK_FALSE(s.has("tierd_migrate_system_cpu_seconds_per_gibibyte", {"promote"}));
  m.record(call, s);
  m.endTick(s);
  // 64 MiB for 0.03 s of system CPU = 0.48 s per GiB
  CHECK(s.value("tierd_migrate_system_cpu_seconds_per_gibibyte", {"promote"}) ==
        doctest::Approx(0.03 / (64.0 / 1024)));
  CHECK_FALSE(s.has("tierd_migrate_copy_throughput_bytes_per_second", {"demote"}));

  MovePagesCallStats failed;
  failed.direction = tierd::Direction::Demote;
  failed.pageSize = 4096;
  failed.callErrno = ESRCH;
  m.record(failed, s);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "ESRCH"}) == 1);
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"demote"}) == 0);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("thread CPU clocks advance with work") {
  const double c0 = threadCpuSeconds();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i)
    x = x + i * 0.5;
  CHECK(threadCpuSeconds() > c0);
  CHECK(threadSystemCpuSeconds() >= 0);
}

#include "tierd/daemon/DaemonMetrics.h"

#include <doctest/doctest.h>

#include <cerrno>

#include "telemetry/metrics/MetricsSink.h"

using namespace tierd;
using namespace tierd::daemon;
using telemetry::RecordingSink;

namespace {

policy::CompiledConfig configWith(std::vector<std::string> names) {
  policy::CompiledConfig c;
  for (auto& n : names) {
    policy::WorkloadConfig w;
    w.name = n;
    c.workloads.push_back(w);
  }
  return c;
}

}  // namespace

TEST_CASE("start puts every counter series tierd updates at 0") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis", "gups"}), {4096, 2ULL << 20}, "damon-vaddr");
  CHECK(s.rejectedUpdates() == 0);
  // direction x page size x result
  CHECK(s.seriesCount("tierd_migrate_pages_total") == 2 * 2 * 8);
  CHECK(s.has("tierd_migrate_pages_total", {"demote", "4k", "node_not_allowed"}));
  CHECK(s.has("tierd_migrate_bytes_total", {"demote", "4k", "no_memory"}));
  CHECK(s.seriesCount("tierd_daemon_cpu_seconds_total") == 7);
  CHECK(s.has("tierd_sampler_samples_total", {"damon"}));
  CHECK(s.has("tierd_sampler_lost_samples_total", {"damon"}));
  CHECK(s.has("tierd_config_reloads_total", {"failure"}));
  CHECK(s.has("tierd_workload_migrated_bytes_total", {"gups", "demote"}));
  CHECK(s.has("tierd_arbiter_pingpong_moves_total", {"promote"}));
  CHECK(s.has("tierd_daemon_errors_total", {"migrate", "ENOMEM"}));
  // The call-latency histogram exists per direction with no observation yet.
  CHECK(s.seriesCount("tierd_migrate_call_duration_seconds") == 2);
  CHECK(s.has("tierd_migrate_call_duration_seconds", {"promote"}));
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"demote"}) == 0);
  for (const auto& u : s.updates())
    CHECK(u.value == 0);
  // The sink's rejected-updates counter: one series per catalog metric name.
  CHECK(s.seriesCount("tierd_metrics_rejected_updates_total") == telemetry::catalog().size());
  CHECK(s.has("tierd_metrics_rejected_updates_total", {"tierd_migrate_bytes_total"}));
  // Every catalog counter has a series, except the kernel's vmstat counters (those present in
  // /proc/vmstat appear with the first reading).
  for (const auto& def : telemetry::catalog())
    if (def.type == telemetry::MetricType::Counter &&
        def.id != telemetry::MetricId::KernelVmstatEvents) {
      INFO(def.name);
      CHECK(s.seriesCount(def.name) > 0);
    }

  // A reload that drops a workload removes its series and adds the new one's.
  m.setWorkloads(configWith({"redis", "gapbs"}));
  CHECK_FALSE(s.has("tierd_workload_migrated_bytes_total", {"gups", "demote"}));
  CHECK(s.has("tierd_workload_migrated_bytes_total", {"gapbs", "promote"}));
  m.configReload(true);
  m.configReload(false);
  m.configReload(false);
  CHECK(s.value("tierd_config_reloads_total", {"success"}) == 1);
  CHECK(s.value("tierd_config_reloads_total", {"failure"}) == 2);
}

TEST_CASE("a tick exports CPU by phase, source increases, hot and cold bytes, migrations") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis"}), {4096, 2ULL << 20}, "perf-sw-page-faults");

  TickReport r;
  r.cpu.topologyScopeNs = 3'000'000;
  r.cpu.topologyNs = 1'000'000;
  r.cpu.samplingNs = 20'000'000;
  r.cpu.locateNs = 10'000'000;
  r.cpu.migrateNs = 20'000'000;
  WorkloadReport w;
  w.name = "redis";
  w.fastBytes = 10ULL << 21;
  w.slowBytes = 30ULL << 21;
  w.hotFastBytes = 4ULL << 21;
  w.hotSlowBytes = 2ULL << 21;
  w.coldFastBytes = 1ULL << 21;
  w.coldSlowBytes = 20ULL << 21;
  r.workloads = {w};
  RangeResult up;
  up.range = {42, 0, 4ULL << 21, 2ULL << 20, 0, Direction::Promote};
  up.outcomes[MoveOutcome::Moved] = 4;
  up.bytesMoved = 4ULL << 21;
  r.batch.ranges = {up};
  r.batch.stats.moveCalls = 1;
  r.batch.stats.maxCallNs = 5'000'000;
  r.batch.stats.wallNs = 8'000'000;
  r.batch.stats.kernelCpuNs = 4'000'000;
  r.promotedBytes = up.bytesMoved;

  SourceSnapshot src;
  src.pid = 42;
  src.name = "perf-sw-page-faults";
  src.stats.samples = 100;
  src.stats.lost = 3;
  src.period = 1;
  auto workloadOf = [](pid_t pid) { return pid == 42 ? std::string("redis") : std::string(); };
  m.tick(r, {src}, 2.0, workloadOf);
  CHECK(s.rejectedUpdates() == 0);
  CHECK(s.value("tierd_daemon_cpu_seconds_total", {"sampler"}) == doctest::Approx(0.02));
  CHECK(s.value("tierd_daemon_cpu_seconds_total", {"topology"}) == doctest::Approx(0.001));
  CHECK(s.value("tierd_daemon_cpu_seconds_total", {"scope"}) == doctest::Approx(0.002));
  CHECK(s.value("tierd_daemon_cpu_seconds_total", {"migrate"}) == doctest::Approx(0.03));
  CHECK(s.value("tierd_sampler_samples_total", {"perf_software"}) == 100);
  CHECK(s.value("tierd_sampler_lost_samples_total", {"perf_software"}) == 3);
  CHECK(s.value("tierd_sampler_overhead_ratio", {"perf_software"}) == doctest::Approx(0.01));
  CHECK(s.value("tierd_sampler_period_events", {"perf_software"}) == 1);
  CHECK(s.value("tierd_hotness_hot_bytes", {"redis", "slow"}) == double(2ULL << 21));
  CHECK(s.value("tierd_hotness_cold_bytes", {"redis", "slow"}) == double(20ULL << 21));
  CHECK(s.value("tierd_workload_memory_bytes", {"redis", "fast"}) == double(10ULL << 21));
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "moved"}) == 4);
  CHECK(s.value("tierd_workload_migrated_bytes_total", {"redis", "promote"}) == double(8 << 20));
  CHECK(s.value("tierd_migrate_copy_throughput_bytes_per_second", {"promote"}) ==
        doctest::Approx(double(8 << 20) / 0.008));

  // The next tick exports increases only; a restarted source (totals back down) counts anew.
  src.stats.samples = 150;
  m.tick(TickReport{}, {src}, 1.0, workloadOf);
  CHECK(s.value("tierd_sampler_samples_total", {"perf_software"}) == 150);
  src.stats.samples = 7;
  m.tick(TickReport{}, {src}, 1.0, workloadOf);
  CHECK(s.value("tierd_sampler_samples_total", {"perf_software"}) == 157);

  // Engine totals and ping-pong holds as increases.
  EngineTotals t;
  t.sourceErrors = 2;
  t.locateErrors = 1;
  m.totals(t, 3, &r);
  t.sourceErrors = 5;
  m.totals(t, 4, &r);
  CHECK(s.value("tierd_daemon_errors_total", {"sampler", "other"}) == 5);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "other"}) == 1);
  // the tick promoted, so the held regions are next refused a demotion
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"demote"}) == 4);
  m.tickFailed();
  CHECK(s.value("tierd_daemon_errors_total", {"topology", "other"}) == 1);
  m.metricsError(EACCES);
  CHECK(s.value("tierd_daemon_errors_total", {"metrics", "EACCES"}) == 1);

  m.vmstat({{"pgmigrate_success", 10}, {"nr_free_pages", 5}});
  m.vmstat({{"pgmigrate_success", 25}, {"nr_free_pages", 9}});
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgmigrate_success"}) == 15);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("source names map to the bounded source label") {
  CHECK(sourceLabel("perf-pebs") == "pebs");
  CHECK(sourceLabel("perf-ibs") == "ibs");
  CHECK(sourceLabel("damon-vaddr") == "damon");
  CHECK(sourceLabel("something") == "");
}

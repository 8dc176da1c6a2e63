#include "tierd/daemon/DaemonMetrics.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "telemetry/hotness/SourceNames.h"
#include "telemetry/metrics/Catalog.h"
#include "telemetry/metrics/MetricsSink.h"

using namespace tierd;
using namespace tierd::daemon;
using telemetry::RecordingSink;

namespace {

policy::CompiledConfig configWith(const std::vector<std::string>& names) {
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
  CHECK(s.has("tierd_sampler_samples_total", {"damon-vaddr"}));
  CHECK(s.has("tierd_sampler_lost_samples_total", {"damon-vaddr"}));
  CHECK(s.has("tierd_config_reloads_total", {"failure"}));
  CHECK(s.has("tierd_workload_migrated_bytes_total", {"gups", "demote"}));
  CHECK(s.has("tierd_arbiter_pingpong_moves_total", {"promote"}));
  CHECK(s.has("tierd_daemon_errors_total", {"migrate", "ENOMEM"}));
  CHECK(s.has("tierd_arbiter_pingpong_holds_total", {}));
  CHECK(s.seriesCount("tierd_arbiter_skipped_candidates_total") == 6);
  CHECK(s.has("tierd_arbiter_skipped_candidates_total", {"fill_no_room"}));
  CHECK(s.has("tierd_arbiter_skipped_candidates_total", {"not_closer"}));
  CHECK(s.has("tierd_migrate_thp_split_after_move_total", {}));
  CHECK(s.has("tierd_migrate_identity_check_failures_total", {}));
  CHECK(s.has("tierd_scope_pid_reuses_total", {}));
  CHECK(s.has("tierd_sampler_source_retries_total", {}));
  CHECK(s.has("tierd_sampler_paused_seconds_total", {}));
  // The call-latency histogram exists per direction with no observation yet.
  CHECK(s.seriesCount("tierd_migrate_call_duration_seconds") == 2);
  CHECK(s.has("tierd_migrate_call_duration_seconds", {"promote"}));
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"demote"}) == 0);
  for (const auto& u : s.updates())
    CHECK(u.value == 0);
  // The sink's rejected-updates counter: one series per catalog metric name.
  CHECK(s.seriesCount("tierd_metrics_rejected_updates_total") == telemetry::catalog().size());
  CHECK(s.has("tierd_metrics_rejected_updates_total", {"tierd_migrate_bytes_total"}));
  // Every catalog counter has a series, except the kernel's own counters (those present in
  // /proc/vmstat or migrate_offload/counters appear with the first reading).
  for (const auto& def : telemetry::catalog())
    if (def.type == telemetry::MetricType::Counter &&
        def.id != telemetry::MetricId::KernelVmstatEvents &&
        def.id != telemetry::MetricId::KernelMigrateOffloadEvents) {
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
  r.fastNodes = {0};
  r.slowNodes = {1, 2};
  WorkloadReport w;
  w.name = "redis";
  w.fastBytes = 10ULL << 21;  // heat-model regions: never the memory metric
  w.slowBytes = 30ULL << 21;
  w.memory = {{0, {12 << 20, 4096}}, {1, {5 << 20, 0}}, {2, {1 << 20, 8192}}, {7, {1 << 20, 0}}};
  w.memorySource = MemorySource::NumaStat;
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
  r.batch.stats.moveCallRecords = {{Direction::Promote, 8'000'000, 4'000'000, 4ULL << 21}};
  r.batch.stats.maxCallNs = 8'000'000;
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
  CHECK(s.value("tierd_sampler_samples_total", {"perf-sw-page-faults"}) == 100);
  CHECK(s.value("tierd_sampler_lost_samples_total", {"perf-sw-page-faults"}) == 3);
  CHECK(s.value("tierd_sampler_overhead_ratio", {"perf-sw-page-faults"}) == doctest::Approx(0.01));
  CHECK(s.value("tierd_sampler_period_events", {"perf-sw-page-faults"}) == 1);
  CHECK(s.value("tierd_hotness_hot_bytes", {"redis", "slow"}) == double(2ULL << 21));
  CHECK(s.value("tierd_hotness_cold_bytes", {"redis", "slow"}) == double(20ULL << 21));
  // Resident memory per tier and kind from WorkloadReport::memory (node 7 is in no tier).
  CHECK(s.value("tierd_workload_memory_bytes", {"redis", "fast", "anon"}) == double(12 << 20));
  CHECK(s.value("tierd_workload_memory_bytes", {"redis", "fast", "file"}) == 4096);
  CHECK(s.value("tierd_workload_memory_bytes", {"redis", "slow", "anon"}) == double(6 << 20));
  CHECK(s.value("tierd_workload_memory_bytes", {"redis", "slow", "file"}) == 8192);
  CHECK(s.value("tierd_workload_memory_source", {"redis", "numa_stat"}) == 1);
  CHECK(s.value("tierd_workload_memory_source", {"redis", "numa_maps"}) == 0);
  CHECK(s.value("tierd_migrate_pages_total", {"promote", "2M", "moved"}) == 4);
  CHECK(s.value("tierd_workload_migrated_bytes_total", {"redis", "promote"}) == double(8 << 20));
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"promote"}) == doctest::Approx(0.008));

  // The next tick exports increases only; a restarted source (totals back down) counts anew.
  src.stats.samples = 150;
  m.tick(TickReport{}, {src}, 1.0, workloadOf);
  CHECK(s.value("tierd_sampler_samples_total", {"perf-sw-page-faults"}) == 150);
  src.stats.samples = 7;
  m.tick(TickReport{}, {src}, 1.0, workloadOf);
  CHECK(s.value("tierd_sampler_samples_total", {"perf-sw-page-faults"}) == 157);

  // Engine totals and ping-pong holds as increases.
  EngineTotals t;
  t.sourceErrors = 2;
  t.locateErrors = 1;
  t.sourceRetries = 3;
  t.pidReuses = 1;
  t.identityChecksFailed = 2;
  t.thpSplitAfterMove = 6;
  t.samplingPausedNs = 2'500'000'000;
  m.totals(t, 3);
  t.sourceErrors = 5;
  t.sourceRetries = 4;
  t.thpSplitAfterMove = 9;
  t.samplingPausedNs = 7'500'000'000;
  m.totals(t, 4);
  CHECK(s.value("tierd_daemon_errors_total", {"sampler", "other"}) == 5);
  CHECK(s.value("tierd_daemon_errors_total", {"migrate", "other"}) == 1);
  CHECK(s.value("tierd_sampler_source_retries_total", {}) == 4);
  CHECK(s.value("tierd_scope_pid_reuses_total", {}) == 1);
  CHECK(s.value("tierd_migrate_identity_check_failures_total", {}) == 2);
  CHECK(s.value("tierd_migrate_thp_split_after_move_total", {}) == 9);
  CHECK(s.value("tierd_sampler_paused_seconds_total", {}) == doctest::Approx(7.5));
  // Regions the guard started holding; ping-pong moves are counted from real moves (below).
  CHECK(s.value("tierd_arbiter_pingpong_holds_total", {}) == 4);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"demote"}) == 0);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"promote"}) == 0);
  m.tickFailed();
  CHECK(s.value("tierd_daemon_errors_total", {"topology", "other"}) == 1);
  m.metricsError(EACCES);
  CHECK(s.value("tierd_daemon_errors_total", {"metrics", "EACCES"}) == 1);

  m.vmstat({{"pgmigrate_success", 10}, {"nr_free_pages", 5}});
  m.vmstat({{"pgmigrate_success", 25}, {"nr_free_pages", 9}});
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgmigrate_success"}) == 15);

  // kernel-patches/ patch 3's counters: increases since the first reading, own metric.
  m.migrateOffload({});
  CHECK(s.seriesCount("tierd_kernel_migrate_offload_events_total") == 0);
  m.migrateOffload({{"batches", 4}, {"bytes", 8 << 20}});
  m.migrateOffload({{"batches", 6}, {"bytes", 12 << 20}});
  CHECK(s.value("tierd_kernel_migrate_offload_events_total", {"batches"}) == 2);
  CHECK(s.value("tierd_kernel_migrate_offload_events_total", {"bytes"}) == 4 << 20);
  CHECK_FALSE(s.has("tierd_kernel_vmstat_events_total", {"batches"}));
  CHECK(s.rejectedUpdates() == 0);
}

namespace {

// A tick whose migrator moved one 2 MiB region of pid 42 in direction `d`.
TickReport movedOnce(uint64_t nowNs, Direction d) {
  TickReport r;
  r.nowNs = nowNs;
  RangeResult rr;
  rr.range = {42, 0x40000000, 2ULL << 20, 2ULL << 20, d == Direction::Promote ? 0 : 1, d};
  rr.outcomes[MoveOutcome::Moved] = 1;
  rr.bytesMoved = 2ULL << 20;
  r.batch.ranges = {rr};
  r.batch.stats.moveCalls = 1;
  r.batch.stats.moveCallRecords = {{d, 1'000'000, 500'000, 2ULL << 20}};
  return r;
}

}  // namespace

TEST_CASE("ping-pong moves are counted from the moves really made, by their own direction") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis"}), {4096, 2ULL << 20}, "");
  auto none = [](pid_t) { return std::string("redis"); };
  constexpr uint64_t kS = 1'000'000'000;
  // up, down: a region promoted and demoted once it cooled is no ping-pong.
  m.tick(movedOnce(0, Direction::Promote), {}, 1.0, none);
  m.tick(movedOnce(10 * kS, Direction::Demote), {}, 1.0, none);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"promote"}) == 0);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"demote"}) == 0);
  // up again within the window: up-down-up, a ping-pong closed by a promotion.
  m.tick(movedOnce(20 * kS, Direction::Promote), {}, 1.0, none);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"promote"}) == 1);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"demote"}) == 0);
  // and down again: down-up-down.
  m.tick(movedOnce(30 * kS, Direction::Demote), {}, 1.0, none);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"demote"}) == 1);
  // Long after (beyond 60 s since the move before last): no ping-pong.
  m.tick(movedOnce(200 * kS, Direction::Promote), {}, 1.0, none);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"promote"}) == 1);
  // Holds of the guard say nothing about direction and are their own counter.
  m.totals(EngineTotals{}, 7);
  CHECK(s.value("tierd_arbiter_pingpong_moves_total", {"promote"}) == 1);
  CHECK(s.value("tierd_arbiter_pingpong_holds_total", {}) == 7);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("one tick's moves: a latency observation per move call, throughput inside calls") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis"}), {4096, 2ULL << 20}, "");
  TickReport r = movedOnce(0, Direction::Promote);
  r.batch.ranges[0].outcomes[MoveOutcome::Moved] = 4;
  r.batch.ranges[0].bytesMoved = 8ULL << 20;
  r.batch.stats.moveCalls = 4;
  r.batch.stats.moveCallRecords.assign(4, {Direction::Promote, 2'000'000, 1'000'000, 2ULL << 20});
  r.batch.stats.maxCallNs = 2'000'000;
  r.batch.stats.wallNs = 500'000'000;  // mostly a rate-budget sleep
  m.tick(r, {}, 1.0, [](pid_t) { return std::string("redis"); });
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"promote"}) == 4);
  // The calls' time (the histogram's _sum), not the batch's rate-budget sleep.
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"promote"}) == doctest::Approx(0.008));
  CHECK(s.value("tierd_migrate_system_cpu_seconds_total", {"promote"}) == doctest::Approx(0.004));
}

TEST_CASE("sampler overhead counts the kdamonds tierd owns beside its own sampling CPU") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis"}), {4096, 2ULL << 20}, "damon-vaddr");
  TickReport r;
  r.cpu.samplingNs = 100'000'000;  // 0.1 s on tierd's thread
  SourceSnapshot src;
  src.pid = 42;
  src.name = "damon-vaddr";
  src.workerPid = 901;
  src.workerCpuSeconds = 0.3;  // the kdamond started this tick
  auto none = [](pid_t) { return std::string(); };
  m.tick(r, {src}, 2.0, none);
  CHECK(s.value("tierd_sampler_overhead_ratio", {"damon-vaddr"}) ==
        doctest::Approx((0.1 + 0.3) / 2));
  src.workerCpuSeconds = 1.2;  // 0.9 s more in the next second
  m.tick(r, {src}, 1.0, none);
  CHECK(s.value("tierd_sampler_overhead_ratio", {"damon-vaddr"}) == doctest::Approx(0.1 + 0.9));
  // A new kdamond for the pid (restarted source): its CPU is counted from its start.
  src.workerPid = 902;
  src.workerCpuSeconds = 0.2;
  m.tick(r, {src}, 1.0, none);
  CHECK(s.value("tierd_sampler_overhead_ratio", {"damon-vaddr"}) == doctest::Approx(0.1 + 0.2));
  // Back-offs for the CPU budget are counted as increases of the source's total.
  CHECK(s.value("tierd_sampler_budget_backoffs_total", {"damon-vaddr"}) == 0);
  src.stats.budgetBackoffs = 2;
  m.tick(r, {src}, 1.0, none);
  src.stats.budgetBackoffs = 3;
  m.tick(r, {src}, 1.0, none);
  CHECK(s.value("tierd_sampler_budget_backoffs_total", {"damon-vaddr"}) == 3);
  // Settled placement (Engine::tick, "Settling") is a gauge, set every tick.
  CHECK(s.value("tierd_placement_settled", {}) == 0);
  r.settled = true;
  r.nextIntervalNs = 4'000'000'000;  // daemon.settled_interval
  m.tick(r, {src}, 1.0, none);
  CHECK(s.value("tierd_placement_settled", {}) == 1);
  CHECK(s.value("tierd_tick_interval_seconds", {}) == 4.0);
  r.settled = false;
  r.nextIntervalNs = 1'000'000'000;
  m.tick(r, {src}, 1.0, none);
  CHECK(s.value("tierd_placement_settled", {}) == 0);
  CHECK(s.value("tierd_tick_interval_seconds", {}) == 1.0);
  // Perf sources: their open events are a gauge.
  SourceSnapshot perf;
  perf.pid = 43;
  perf.name = "perf-sw-page-faults";
  perf.openEvents = 6;
  SourceSnapshot perf2 = perf;
  perf2.pid = 44;
  perf2.openEvents = 2;
  m.tick(r, {perf, perf2}, 1.0, none);
  CHECK(s.value("tierd_sampler_open_perf_events", {"perf-sw-page-faults"}) == 8);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("taskCpuSeconds reads utime + stime of /proc/PID/stat") {
  char tmpl[] = "/tmp/daemon-metrics-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  std::filesystem::create_directories(root + "/proc/901");
  // comm with a space and a parenthesis; utime 250, stime 50 ticks (100 per second here)
  std::ofstream(root + "/proc/901/stat")
      << "901 (kdamond.0 (x)) S 2 0 0 0 -1 2129984 0 0 0 0 250 50 0 0 20 0 1 0 512 0 0\n";
  auto cpu = taskCpuSeconds(sys::SysRoot(root), 901);
  REQUIRE(cpu.has_value());
  CHECK(*cpu == doctest::Approx(3.0));
  CHECK_FALSE(taskCpuSeconds(sys::SysRoot(root), 902).has_value());
  std::filesystem::remove_all(root);
}

TEST_CASE("source names map to the bounded source label") {
  CHECK(sourceLabel("perf-pebs") == "perf-pebs");
  CHECK(sourceLabel("perf-ibs") == "perf-ibs");
  CHECK(sourceLabel("damon-vaddr") == "damon-vaddr");
  CHECK(sourceLabel("something") == "");
}

TEST_CASE("every hotness source is spelled from one table: name, source label, capability") {
  const auto& sourceValues = telemetry::findMetric("tierd_sampler_samples_total")->labels[0].values;
  const auto& capValues =
      telemetry::findMetric("tierd_kernel_capability_available")->labels[0].values;
  std::vector<std::string> configNames;  // the `[sampling] source` values
  for (policy::SampleSource c :
       {policy::SampleSource::Auto, policy::SampleSource::Perf, policy::SampleSource::Damon,
        policy::SampleSource::Replay, policy::SampleSource::PerfSwPageFaults})
    configNames.emplace_back(policy::sampleSourceName(c));
  auto in = [](const std::vector<std::string>& v, std::string_view s) {
    return std::find(v.begin(), v.end(), std::string(s)) != v.end();
  };
  for (const telemetry::SourceInfo& s : telemetry::kSources) {
    INFO(s.name);
    CHECK(telemetry::sourceKindOf(s.name) == s.kind);
    CHECK(sourceLabel(std::string(s.name)) == s.metricLabel);
    CHECK(in(sourceValues, s.metricLabel));
    if (!s.capability.empty()) CHECK(in(capValues, s.capability));
    CHECK(in(configNames, s.configName));  // every source can be asked for by name
    CHECK(s.metricLabel == s.name);        // one spelling in the log, tierctl and metrics
  }
  // Only DAMON weighs its samples; the names the rig greps for stay as they were.
  CHECK(telemetry::weightKindOf("damon-vaddr") == telemetry::WeightKind::Weighted);
  CHECK(telemetry::weightKindOf("perf-pebs") == telemetry::WeightKind::PerSample);
  CHECK(telemetry::weightKindOf("something") == telemetry::WeightKind::PerSample);
  CHECK(sourceLabel("perf-sw-page-faults") == "perf-sw-page-faults");
  CHECK(sourceLabel("replay") == "replay");
}

TEST_CASE("ticks are counted by result with the last one's wall-clock time") {
  RecordingSink s;
  DaemonMetrics m(s);
  m.start(configWith({"redis"}), {4096}, "damon-vaddr");
  CHECK(s.has("tierd_daemon_ticks_total", {"ok"}));
  CHECK(s.value("tierd_daemon_ticks_total", {"failed"}) == 0);
  m.tickDone(true, 1.8e9);
  m.tickDone(false, 1.8e9 + 2.5);
  m.tickDone(true, 1.8e9 + 5);
  CHECK(s.value("tierd_daemon_ticks_total", {"ok"}) == 2);
  CHECK(s.value("tierd_daemon_ticks_total", {"failed"}) == 1);
  CHECK(s.value("tierd_daemon_last_tick_timestamp_seconds", {}) == doctest::Approx(1.8e9 + 5));
  CHECK(s.rejectedUpdates() == 0);
}

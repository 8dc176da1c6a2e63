#include <doctest/doctest.h>

#include <cmath>

#include "telemetry/metrics/DemoValues.h"
#include "telemetry/metrics/MetricsSink.h"

using namespace tierd::telemetry;

TEST_CASE("RecordingSink records accepted updates in order and sums counters") {
  RecordingSink s;
  CHECK(s.add(metric::kMigrateBytes, {"promote", "2M", "moved"}, 4 << 20));
  CHECK(s.add(metric::kMigrateBytes, {"promote", "2M", "moved"}, 2 << 20));
  CHECK(s.set(metric::kNodeCapacity, {"0", "fast"}, 100));
  CHECK(s.set(metric::kNodeCapacity, {"0", "fast"}, 90));
  CHECK(s.observe(metric::kMigrateCallDuration, {"demote"}, 0.02));
  CHECK(s.observe(metric::kMigrateCallDuration, {"demote"}, 0.01));
  CHECK(s.value("tierd_migrate_bytes_total", {"promote", "2M", "moved"}) == 6 << 20);
  CHECK(s.value("tierd_node_capacity_bytes", {"0", "fast"}) == 90);
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"demote"}) == 2);
  CHECK(s.value("tierd_migrate_call_duration_seconds", {"demote"}) == doctest::Approx(0.03));
  CHECK(s.log() ==
        "add tierd_migrate_bytes_total{promote,2M,moved} 4.1943e+06\n"
        "add tierd_migrate_bytes_total{promote,2M,moved} 2.09715e+06\n"
        "set tierd_node_capacity_bytes{0,fast} 100\n"
        "set tierd_node_capacity_bytes{0,fast} 90\n"
        "observe tierd_migrate_call_duration_seconds{demote} 0.02\n"
        "observe tierd_migrate_call_duration_seconds{demote} 0.01\n");
  CHECK(s.rejectedUpdates() == 0);

  // declare: a histogram series with no observation; an existing one keeps its data.
  CHECK(s.declare(metric::kMigrateCallDuration, {"promote"}));
  CHECK(s.declare(metric::kMigrateCallDuration, {"demote"}));
  CHECK(s.has("tierd_migrate_call_duration_seconds", {"promote"}));
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"promote"}) == 0);
  CHECK(s.count("tierd_migrate_call_duration_seconds", {"demote"}) == 2);
  CHECK(s.log().find("declare tierd_migrate_call_duration_seconds{promote} 0\n") !=
        std::string::npos);
  CHECK_FALSE(s.declare(metric::kMigrateCallDuration, {"sideways"}));
  CHECK(s.rejectedUpdates() == 1);
}

TEST_CASE("updates with unbounded or wrong labels are dropped and counted") {
  RecordingSink s;
  // a pid is never a label value; "sideways" is not a direction; wrong label count
  CHECK_FALSE(s.add(metric::kMigrateBytes, {"sideways", "2M", "moved"}, 1));
  CHECK(s.lastRejection().find("direction=\"sideways\"") != std::string::npos);
  CHECK_FALSE(s.add(metric::kMigrateBytes, {"promote", "2M"}, 1));
  CHECK_FALSE(s.set(metric::kHotnessHotBytes, {"12345", "fast"}, 1));  // not a configured workload
  CHECK_FALSE(s.set(metric::kNodeCapacity, {"node0", "fast"}, 1));
  CHECK_FALSE(s.set(metric::kNodeCapacity, {"01", "fast"}, 1));
  CHECK_FALSE(s.set(metric::kNodeCapacity, {"1024", "fast"}, 1));
  CHECK(s.set(metric::kNodeCapacity, {"1023", "fast"}, 1));
  CHECK_FALSE(s.add(metric::kSamplerSamples, {"damon-vaddr"}, -1));  // counters only go up
  CHECK_FALSE(s.set(metric::kSamplerOverhead, {"damon-vaddr"}, NAN));
  CHECK_FALSE(s.set(metric::kBuildInfo, {"9.9.9-not-this-build"}, 1));
  CHECK(s.rejectedUpdates() == 9);
  CHECK(s.value("tierd_metrics_rejected_updates_total", {"tierd_migrate_bytes_total"}) == 2);
  CHECK(s.value("tierd_metrics_rejected_updates_total", {"tierd_node_capacity_bytes"}) == 3);
  CHECK(s.seriesCount("tierd_migrate_bytes_total") == 0);
  CHECK(s.seriesCount("tierd_hotness_hot_bytes") == 0);
}

TEST_CASE("workload labels come only from the configured names and removed workloads vanish") {
  RecordingSink s;
  s.setWorkloads({"redis", "gapbs"});
  CHECK(s.set(metric::kHotnessHotBytes, {"redis", "fast"}, 10));
  CHECK(s.set(metric::kHotnessHotBytes, {"gapbs", "slow"}, 20));
  CHECK_FALSE(s.set(metric::kHotnessHotBytes, {"memcached", "fast"}, 1));
  s.setWorkloads({"gapbs"});
  CHECK_FALSE(s.has("tierd_hotness_hot_bytes", {"redis", "fast"}));
  CHECK(s.value("tierd_hotness_hot_bytes", {"gapbs", "slow"}) == 20);
  CHECK_FALSE(s.set(metric::kHotnessHotBytes, {"redis", "fast"}, 10));
}

TEST_CASE("VmstatDeltas exports increases since the first reading, known keys only") {
  RecordingSink s;
  VmstatDeltas d;
  d.update({{"pgpromote_success", 1000}, {"pgdemote_kswapd", 50}, {"nr_free_pages", 7}}, s);
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgpromote_success"}) == 0);
  CHECK(s.has("tierd_kernel_vmstat_events_total", {"pgdemote_kswapd"}));
  CHECK(s.seriesCount("tierd_kernel_vmstat_events_total") == 2);
  d.update({{"pgpromote_success", 1512}, {"pgdemote_kswapd", 50}}, s);
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgpromote_success"}) == 512);
  // a counter going backwards rebases instead of producing a negative delta
  d.update({{"pgpromote_success", 10}, {"pgdemote_kswapd", 60}}, s);
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgpromote_success"}) == 512);
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgdemote_kswapd"}) == 10);
  d.update({{"pgpromote_success", 15}}, s);
  CHECK(s.value("tierd_kernel_vmstat_events_total", {"pgpromote_success"}) == 517);
  CHECK(s.rejectedUpdates() == 0);
}

TEST_CASE("the demo feeder populates every catalog family with accepted updates") {
  RecordingSink s;
  std::vector<std::string> workloads = {"redis", "gapbs"};
  s.setWorkloads(workloads);
  DemoFeeder f;
  f.feed(s, workloads);
  f.feed(s, workloads);
  CHECK(s.rejectedUpdates() == 0);
  for (const auto& m : catalog()) {
    INFO(m.name);
    CHECK(s.seriesCount(m.name) > 0);
  }
}

TEST_CASE("a node label of 25 digits is dropped, not an exception") {
  RecordingSink s;
  CHECK_FALSE(s.set(metric::kNodeCapacity, {"1234567890123456789012345", "fast"}, 1));
  CHECK(s.rejectedUpdates() == 1);
  CHECK(s.set(metric::kNodeCapacity, {"7", "fast"}, 1));
}

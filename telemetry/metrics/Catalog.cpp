#include "telemetry/metrics/Catalog.h"

#include "tierd/core/Migration.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sstream>

#ifndef TIERD_VERSION
#error "TIERD_VERSION must be defined by the build (telemetry/metrics/CMakeLists.txt)"
#endif

namespace tierd::telemetry {

namespace {

// Label definitions shared by several metrics. Fixed value lists are part of the product
// interface: dashboards and alerts match on them.
LabelDef direction() {
  return {"direction",
          LabelDomain::Fixed,
          {"promote", "demote"},
          "promote = slow tier to fast tier, demote = fast tier to slow tier"};
}
LabelDef pageSize() {
  return {"page_size",
          LabelDomain::Fixed,
          {"4k", "16k", "64k", "2M", "32M", "512M", "1G", "other"},
          "size of the pages, not their kind: base page, THP (2M) or hugetlb (2M, 1G); THP and "
          "hugetlb-2M pages are both 2M here (tierctl locate names the kind: thp, hugetlb-2M)"};
}
LabelDef migrateResult() {
  // The values are the move-outcome vocabulary's metric labels (kMoveOutcomes), once each.
  std::vector<std::string> values;
  for (const MoveOutcomeInfo& o : kMoveOutcomes)
    if (*o.metricLabel && std::find(values.begin(), values.end(), o.metricLabel) == values.end())
      values.emplace_back(o.metricLabel);
  return {"result", LabelDomain::Fixed, std::move(values),
          "per-page outcome from move_pages(2) status[] (tierctl's JSON names, except failed): "
          "moved; already on the target node; -EBUSY; -ENOENT/-EFAULT or process exited; "
          "-EACCES/-EPERM; -ENOMEM; not migrated (kernel gave up) or anything else; target node "
          "outside the task's cpuset.mems (call-level -EACCES)"};
}
LabelDef errnoName() {
  return {"errno",
          LabelDomain::Fixed,
          {"EBUSY", "ENOMEM", "EFAULT", "EACCES", "EPERM", "ENOENT", "EINVAL", "ESRCH", "EAGAIN",
           "EIO", "other"},
          "errno of the failed call or page status; unlisted values are counted as other"};
}
LabelDef component() {
  return {"component",
          LabelDomain::Fixed,
          {"sampler", "policy", "migrate", "scope", "topology", "metrics", "main"},
          "part of tierd: hotness sampling, policy and arbiter, migration, workload scoping, "
          "topology refresh, metrics export, the main loop"};
}
LabelDef source() {
  return {"source",
          LabelDomain::Fixed,
          {"perf-pebs", "perf-ibs", "damon-vaddr", "perf-sw-page-faults", "replay"},
          "hotness source, by its name (tierctl sampling --probe, tierctl status, the log): Intel "
          "PEBS, AMD IBS, DAMON vaddr, software page faults, a replayed trace"};
}
LabelDef workload() {
  return {"workload", LabelDomain::Workload, {}, "a workload name from the config"};
}
LabelDef tier() {
  return {"tier", LabelDomain::Fixed, {"fast", "slow"}, "fast = DRAM, slow = CXL or far memory"};
}
LabelDef node() {
  return {"node", LabelDomain::Node, {}, "NUMA node id as the kernel numbers it"};
}

MetricDef counter(CounterHandle h, std::string name, std::string unit, std::string help,
                  std::vector<LabelDef> labels) {
  return {h.id,
          std::move(name),
          MetricType::Counter,
          std::move(unit),
          std::move(help),
          std::move(labels),
          {}};
}
MetricDef gauge(GaugeHandle h, std::string name, std::string unit, std::string help,
                std::vector<LabelDef> labels) {
  return {
      h.id, std::move(name), MetricType::Gauge, std::move(unit), std::move(help), std::move(labels),
      {}};
}
MetricDef histogram(HistogramHandle h, std::string name, std::string unit, std::string help,
                    std::vector<LabelDef> labels, std::vector<double> buckets) {
  return {h.id,
          std::move(name),
          MetricType::Histogram,
          std::move(unit),
          std::move(help),
          std::move(labels),
          std::move(buckets)};
}

// move_pages(2) calls: bytes and pages by result, call time, kernel CPU. Throughput and CPU
// per GiB are PromQL over these counters (docs/metrics.md), not gauges tierd computes.
std::vector<MetricDef> migrationMetrics() {
  using namespace metric;
  return {
      counter(kMigrateBytes, "tierd_migrate_bytes_total", "bytes",
              "Bytes tierd asked move_pages(2) to move, by direction, page size and per-page "
              "result (pages times page size).",
              {direction(), pageSize(), migrateResult()}),
      counter(kMigratePages, "tierd_migrate_pages_total", "pages",
              "Pages (of page_size each) passed to move_pages(2), by direction, page size and "
              "per-page result read from status[].",
              {direction(), pageSize(), migrateResult()}),
      histogram(kMigrateCallDuration, "tierd_migrate_call_duration_seconds", "seconds",
                "Wall time of each move_pages(2) call that moves pages (CLOCK_MONOTONIC around "
                "the call alone; status queries with nodes=NULL are not observed); calls are "
                "sized to a latency target of about 20 ms and carry one direction each.",
                {direction()},
                {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5,
                 1.0, 2.5}),
      counter(kMigrateSystemCpu, "tierd_migrate_system_cpu_seconds_total", "seconds",
              "System (kernel) CPU time of the migrating thread spent inside the move_pages(2) "
              "calls that move pages (getrusage(RUSAGE_THREAD) ru_stime around each call).",
              {direction()}),
  };
}

// tierd itself: errors survived and CPU per component.
std::vector<MetricDef> daemonMetrics() {
  using namespace metric;
  return {
      counter(kDaemonErrors, "tierd_daemon_errors_total", "errors",
              "Failed system calls and per-page errors tierd counted and survived, by component "
              "and errno.",
              {component(), errnoName()}),
      counter(kDaemonCpu, "tierd_daemon_cpu_seconds_total", "seconds",
              "CPU time (user + system) tierd's threads spent per component "
              "(CLOCK_THREAD_CPUTIME_ID deltas around each phase of a tick).",
              {component()}),
      counter(kDaemonTicks, "tierd_daemon_ticks_total", "ticks",
              "Ticks the daemon's loop finished, by result: ok, or failed (the tick's error is "
              "logged and counted in tierd_daemon_errors_total). A rate of 0 means the loop "
              "stalled; /healthz answers 503 then.",
              {{"result", LabelDomain::Fixed, {"ok", "failed"}, "how the tick ended"}}),
      gauge(kDaemonLastTick, "tierd_daemon_last_tick_timestamp_seconds", "seconds",
            "When the last tick finished, in seconds since the Unix epoch (CLOCK_REALTIME): "
            "time() - this is how long the loop has been silent.",
            {}),
  };
}

// Hotness sources: samples, losses, throttling, overhead, period and interval, open perf
// events, start retries.
std::vector<MetricDef> samplerMetrics() {
  using namespace metric;
  return {
      counter(kSamplerSamples, "tierd_sampler_samples_total", "samples",
              "Access samples (or DAMON region reports) drained from a hotness source.",
              {source()}),
      counter(kSamplerLostSamples, "tierd_sampler_lost_samples_total", "samples",
              "Samples the kernel dropped (PERF_RECORD_LOST lost counts) before tierd read them.",
              {source()}),
      counter(kSamplerThrottleEvents, "tierd_sampler_throttle_events_total", "events",
              "PERF_RECORD_THROTTLE records: the kernel throttled sampling because interrupts "
              "took too long (perf_event_max_sample_rate).",
              {source()}),
      gauge(kSamplerOverhead, "tierd_sampler_overhead_ratio", "ratio",
            "CPU seconds tierd spent sampling and draining per wall-clock second over the last "
            "tick (0.01 = 1% of one CPU).",
            {source()}),
      gauge(kSamplerPeriod, "tierd_sampler_period_events", "events",
            "Current perf sample period: events counted between two samples (PEBS/IBS/software; "
            "adapted to the overhead budget). 0 for DAMON and replay.",
            {source()}),
      gauge(kSamplerInterval, "tierd_sampler_interval_seconds", "seconds",
            "Current sampling interval of interval-driven sources (DAMON sampling interval, "
            "replay tick). 0 for period-driven perf sources.",
            {source()}),
      gauge(kSamplerOpenPerfEvents, "tierd_sampler_open_perf_events", "events",
            "perf events tierd holds open now (each one fd and one mapped ring), summed over the "
            "sampled processes (PerfSampler::openEvents: one per event and CPU in cgroup mode, "
            "per event and live thread in pid mode). Perf sources only.",
            {source()}),
      counter(kSamplerSourceRetries, "tierd_sampler_source_retries_total", "attempts",
              "Attempts to start a hotness source for a process whose source had failed before "
              "(DAMON busy, a full kdamond pool, perf refused), made after a back-off of 1 s "
              "doubling up to 64 s.",
              {}),
      counter(kSamplerBudgetBackoffs, "tierd_sampler_budget_backoffs_total", "backoffs",
              "Times a hotness source sampled less because its CPU over the last window "
              "(at least 1 s) exceeded sampling.cpu_budget_percent: PEBS/IBS doubled their sample "
              "period, DAMON doubled its kdamond's sampling interval (kdamond CPU from "
              "/proc/PID/stat plus tierd's draining; at most max_sample_us and aggr_us / 5).",
              {source()}),
      counter(kSamplerPausedSeconds, "tierd_sampler_paused_seconds_total", "seconds",
              "Seconds hotness sources spent paused during settled waits "
              "(sampling.settled_damon_window: a DAMON context's pause, its kdamond asleep), "
              "summed over the sampled processes. Grows by about daemon.settled_interval minus "
              "the lead before each tick per settled wait and source; 0 where nothing pauses.",
              {}),
      gauge(kPlacementSettled, "tierd_placement_settled", "boolean",
            "1 while the engine judges placement settled (the plans of the last 10 ticks moved "
            "at most sampling.settle_trickle_percent of the hot bytes, with samples seen and no "
            "process entering or leaving a scope) and has told the sources so: DAMON sources "
            "then sample within sampling.settled_cpu_budget_percent. 0 otherwise.",
            {}),
      gauge(kTickInterval, "tierd_tick_interval_seconds", "seconds",
            "How long the daemon waits after this tick before the next one: daemon.interval, "
            "or daemon.settled_interval while placement is settled (tierd_placement_settled 1) "
            "and that key is longer. A change in the workload is seen up to this much later.",
            {}),
  };
}

// Per workload: hot and cold bytes by tier, resident memory and where it was read, bytes moved.
std::vector<MetricDef> workloadMetrics() {
  using namespace metric;
  return {
      gauge(kHotnessHotBytes, "tierd_hotness_hot_bytes", "bytes",
            "Bytes of a workload's memory the heat model ranks hot, by the tier they live on now.",
            {workload(), tier()}),
      gauge(kHotnessColdBytes, "tierd_hotness_cold_bytes", "bytes",
            "Bytes of a workload's memory the heat model ranks cold, by the tier they live on now.",
            {workload(), tier()}),
      gauge(kWorkloadMemoryBytes, "tierd_workload_memory_bytes", "bytes",
            "Resident memory of a workload per tier and kind, summed over the tier's nodes: "
            "from the workload cgroup's memory.numa_stat (anon and file lines; the cgroup with "
            "its descendants; no hugetlb pages) when the workload is selected by cgroup and the "
            "file is readable, else from /proc/PID/numa_maps of its processes (pages present per "
            "node; file-backed mappings are file, the rest, hugetlb included, anon). "
            "tierd_workload_memory_source says which.",
            {workload(),
             tier(),
             {"kind",
              LabelDomain::Fixed,
              {"anon", "file"},
              "anon = anonymous memory; file = page cache and shared memory"}}),
      gauge(kWorkloadMemorySource, "tierd_workload_memory_source", "boolean",
            "Which source tierd_workload_memory_bytes of a workload was read from this tick, as "
            "an OpenMetrics state set: 1 for the source used, 0 for the other.",
            {workload(),
             {"source",
              LabelDomain::Fixed,
              {"numa_stat", "numa_maps"},
              "numa_stat = the cgroup's memory.numa_stat; numa_maps = /proc/PID/numa_maps of "
              "the workload's processes"}}),
      counter(kWorkloadMigratedBytes, "tierd_workload_migrated_bytes_total", "bytes",
              "Bytes of a workload's memory tierd moved (per-page result moved), by direction.",
              {workload(), direction()}),
  };
}

// Per NUMA node: capacity, use and hugetlb pools.
std::vector<MetricDef> nodeMetrics() {
  using namespace metric;
  return {
      gauge(kNodeCapacity, "tierd_node_capacity_bytes", "bytes",
            "Memory of a NUMA node (nodeN/meminfo MemTotal), labelled with its tier.",
            {node(), tier()}),
      gauge(kNodeUsed, "tierd_node_used_bytes", "bytes",
            "Memory in use on a NUMA node (nodeN/meminfo MemTotal - MemFree).", {node(), tier()}),
      gauge(kNodeHugetlbPages, "tierd_node_hugetlb_pages", "pages",
            "hugetlb pages reserved on a node (nodeN/hugepages/hugepages-<kB>kB/nr_hugepages), by "
            "page size.",
            {node(), tier(), pageSize()}),
      gauge(kNodeHugetlbFreePages, "tierd_node_hugetlb_free_pages", "pages",
            "Free hugetlb pages on a node (.../free_hugepages), by page size; a 1G move needs a "
            "free 1G page on the target.",
            {node(), tier(), pageSize()}),
  };
}

// The arbiter: ping-pong moves and holds, candidates left unplanned.
std::vector<MetricDef> arbiterMetrics() {
  using namespace metric;
  return {
      counter(kArbiterPingpongMoves, "tierd_arbiter_pingpong_moves_total", "moves",
              "Ping-pong moves tierd made: a move that took a region back where it had just "
              "come from, reversing the region's previous move which itself reversed the one "
              "before, all three within 60 s (up-down-up or down-up-down; the definition of "
              "tierctl simulate, policy/PingPong.h), by the direction of that move.",
              {direction()}),
      counter(kArbiterPingpongHolds, "tierd_arbiter_pingpong_holds_total", "regions",
              "Regions the ping-pong guard started holding (2 reversals in a row, each within 4 "
              "cooldowns of the move before): not planned again for 16 cooldowns.",
              {}),
      counter(kArbiterSkippedCandidates, "tierd_arbiter_skipped_candidates_total", "candidates",
              "Move candidates the arbiter left unplanned in a tick, by reason; a candidate left "
              "tick after tick is counted every tick.",
              {{"reason",
                LabelDomain::Fixed,
                {"budget", "no_room", "quota", "not_allowed", "not_closer", "fill_no_room"},
                "byte budget of the direction spent; no target node could take it; the workload "
                "is at its fast-tier quota; every node of the target tier is outside the task's "
                "cpuset.mems; no fast node with room is nearer the task's CPUs than the node the "
                "region is on; a fill (fill_headroom: a warm region below the cut) found no room "
                "above fill_headroom, which is expected: fills take only spare room"}}),
  };
}

// What the checks around a move found: THPs split after it, identity checks failed, pids
// reused.
std::vector<MetricDef> checkMetrics() {
  using namespace metric;
  return {
      counter(kMigrateThpSplitAfterMove, "tierd_migrate_thp_split_after_move_total", "pages",
              "THPs tierd moved that the next tick located on their target as base pages, "
              "bounded by how far their VMA's smaps AnonHugePages fell (the kernel split them, "
              "typically for want of a free 2 MiB block on the target).",
              {}),
      counter(kMigrateIdentityCheckFailures, "tierd_migrate_identity_check_failures_total", "calls",
              "move_pages(2) calls not made because the pid no longer named the process the "
              "batch was planned for (start time or pidfd check right before the call).",
              {}),
      counter(kScopePidReuses, "tierd_scope_pid_reuses_total", "processes",
              "Tracked pids found naming another process (a different start time, /proc/PID/stat "
              "field 22): the old process's heat and plans were dropped, the new one starts "
              "afresh.",
              {}),
  };
}

// The daemon's config, kernel and build, and the metrics sink's own rejected updates.
std::vector<MetricDef> systemMetrics() {
  using namespace metric;
  return {
      counter(kConfigReloads, "tierd_config_reloads_total", "reloads",
              "Config reloads (SIGHUP); on failure the last good config stays.",
              {{"result", LabelDomain::Fixed, {"success", "failure"}, "outcome of the reload"}}),
      gauge(kKernelCapability, "tierd_kernel_capability_available", "boolean",
            "1 when the kernel or hardware offers a capability tierd can use, else 0 (read-only "
            "probes at start and on topology refresh).",
            {{"capability",
              LabelDomain::Fixed,
              {"thp", "hugetlb_1g", "memory_tiers", "hmat", "demotion", "numa_balancing_tiering",
               "damon_sysfs", "damon_vaddr", "damon_paddr", "perf_pebs", "perf_ibs",
               "perf_sw_page_faults", "move_pages", "kernel_folio_copy_chunked",
               "kernel_pages_stat_batched", "kernel_migrate_offload",
               "kernel_migrate_offload_move_pages", "kernel_migrate_offload_hugetlb"},
              "what is available"}}),
      counter(kKernelVmstatEvents, "tierd_kernel_vmstat_events_total", "events",
              "Increase of the kernel's own migration counters in /proc/vmstat since tierd "
              "started (pgmigrate_*, pgpromote_*, pgdemote_* and numa_pages_migrated count base "
              "pages, thp_migration_* count THPs), so tierd and the kernel compare on one graph.",
              {{"counter", LabelDomain::Fixed, vmstatCounterNames(), "/proc/vmstat key"}}),
      counter(kKernelMigrateOffloadEvents, "tierd_kernel_migrate_offload_events_total", "events",
              "Increase since tierd started of the copy-offload counters of a kernel with "
              "kernel-patches/ patch 3 (/sys/kernel/mm/migrate_offload/counters/): batches and "
              "folios handed to the copy engine, bytes it copied, folios the CPU copied after "
              "the engine was given them (fallbacks), and with patch 6 the hugetlb folios among "
              "the copied ones (hugetlb_folios). Absent on other kernels.",
              {{"counter", LabelDomain::Fixed, migrateOffloadCounterNames(),
                "file of migrate_offload/counters/"}}),
      gauge(kBuildInfo, "tierd_build_info", "info", "Always 1; labels describe the build.",
            {{"version", LabelDomain::Build, {}, "tierd version (CMake PROJECT_VERSION)"}}),
      counter(kMetricsRejectedUpdates, "tierd_metrics_rejected_updates_total", "updates",
              "Metric updates the sink dropped because a label value was out of its bounded "
              "set, the label count was wrong or the value was invalid (a bug in tierd).",
              {{"metric", LabelDomain::MetricName, {}, "catalog name of the metric"}}),
  };
}

// The catalog, in the order the docs list it: each group's metrics in turn.
std::vector<MetricDef> buildCatalog() {
  std::vector<MetricDef> c;
  for (auto group : {migrationMetrics, daemonMetrics, samplerMetrics, workloadMetrics, nodeMetrics,
                     arbiterMetrics, checkMetrics, systemMetrics})
    for (MetricDef& m : group())
      c.push_back(std::move(m));
  return c;
}

}  // namespace

const char* metricTypeName(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Histogram:
      return "histogram";
  }
  return "untyped";
}

const std::vector<MetricDef>& catalog() {
  static const std::vector<MetricDef> kCatalog = buildCatalog();
  return kCatalog;
}

const MetricDef& metricDef(MetricId id) {
  return catalog().at(static_cast<size_t>(id));
}

const MetricDef* findMetric(std::string_view name) {
  for (const auto& m : catalog())
    if (m.name == name) return &m;
  return nullptr;
}

const std::vector<std::string>& migrateOffloadCounterNames() {
  static const std::vector<std::string> kNames = {"batches", "folios", "bytes", "fallbacks",
                                                  "hugetlb_folios"};
  return kNames;
}

const std::vector<std::string>& vmstatCounterNames() {
  // Documentation/admin-guide/mm and mm/vmstat.c (6.12): migration, promotion and demotion
  // counters. pgdemote_proactive appeared in 6.13.
  static const std::vector<std::string> kNames = {
      "pgmigrate_success",   "pgmigrate_fail",        "pgpromote_success",   "pgpromote_candidate",
      "pgdemote_kswapd",     "pgdemote_direct",       "pgdemote_khugepaged", "pgdemote_proactive",
      "numa_pages_migrated", "thp_migration_success", "thp_migration_fail",  "thp_migration_split",
  };
  return kNames;
}

std::vector<std::string> buildInfoLabels() {
  return {TIERD_VERSION};
}

std::string errnoLabel(int err) {
  if (err < 0) err = -err;
  switch (err) {
    case EBUSY:
      return "EBUSY";
    case ENOMEM:
      return "ENOMEM";
    case EFAULT:
      return "EFAULT";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EINVAL:
      return "EINVAL";
    case ESRCH:
      return "ESRCH";
    case EAGAIN:
      return "EAGAIN";
    case EIO:
      return "EIO";
    default:
      return "other";
  }
}

std::string pageSizeLabel(uint64_t bytes) {
  static const std::map<uint64_t, std::string> kNames = {
      {4ULL << 10, "4k"},   {16ULL << 10, "16k"},   {64ULL << 10, "64k"}, {2ULL << 20, "2M"},
      {32ULL << 20, "32M"}, {512ULL << 20, "512M"}, {1ULL << 30, "1G"},
  };
  auto it = kNames.find(bytes);
  return it == kNames.end() ? "other" : it->second;
}

std::string directionLabel(Direction d) {
  return d == Direction::Promote ? "promote" : "demote";
}

namespace {

const char* domainName(LabelDomain d) {
  switch (d) {
    case LabelDomain::Fixed:
      return "fixed";
    case LabelDomain::Workload:
      return "workload";
    case LabelDomain::Node:
      return "node";
    case LabelDomain::MetricName:
      return "metric_name";
    case LabelDomain::Build:
      return "build";
  }
  return "?";
}

std::string labelValuesText(const LabelDef& l) {
  switch (l.domain) {
    case LabelDomain::Fixed: {
      std::string s;
      for (const auto& v : l.values)
        s += (s.empty() ? "`" : ", `") + v + "`";
      return s;
    }
    case LabelDomain::Workload:
      return "workload names from the config";
    case LabelDomain::Node:
      return "node ids (0.." + std::to_string(kMaxNodeId) + ")";
    case LabelDomain::MetricName:
      return "catalog metric names";
    case LabelDomain::Build:
      return "set by the build";
  }
  return "";
}

std::string formatBound(double b) {
  std::ostringstream o;
  o << b;
  return o.str();
}

}  // namespace

std::string catalogMarkdown() {
  std::ostringstream o;
  o << "# tierd metrics\n\n"
    << "<!-- Generated by `tierctl metrics --catalog --markdown` from "
       "telemetry/metrics/Catalog.cpp. Do not edit: a unit test compares this file with the "
       "catalog. -->\n\n"
    << "tierd exports these metrics in the Prometheus text format on `/metrics` "
       "(default `127.0.0.1:9464`). Names follow `tierd_<subsystem>_<what>_<unit>`; counters "
       "end in `_total`. There is no host label (Prometheus adds `instance`) and every label "
       "value is bounded: fixed lists, configured workload names, node ids.\n\n"
    << "Each scrape also carries the standard process metrics of Prometheus client libraries, "
       "read from /proc/self: `process_cpu_seconds_total`, `process_start_time_seconds`, "
       "`process_virtual_memory_bytes`, `process_resident_memory_bytes`, `process_open_fds` and "
       "`process_max_fds`. The same port answers `/healthz` (200 while the tick loop runs; 503 "
       "before the first tick, when no tick finished for 3 intervals and at least 30 s, or after "
       "3 failed ticks in a row; no credentials needed, so a liveness probe can use it) and `/` "
       "(links to both).\n\n"
    << "Rates are PromQL over the counters, never gauges tierd computes. Copy throughput (bytes "
       "moved per second inside move_pages(2)): `sum by (direction) "
       "(rate(tierd_migrate_bytes_total{result=\"moved\"}[5m])) / sum by (direction) "
       "(rate(tierd_migrate_call_duration_seconds_sum[5m]))`. Kernel CPU per GiB moved: `sum by "
       "(direction) (rate(tierd_migrate_system_cpu_seconds_total[5m])) / (sum by (direction) "
       "(rate(tierd_migrate_bytes_total{result=\"moved\"}[5m])) / 2^30)`.\n\n"
    << "| metric | type | unit | labels |\n|---|---|---|---|\n";
  for (const auto& m : catalog()) {
    std::string labels;
    for (const auto& l : m.labels)
      labels += (labels.empty() ? "`" : ", `") + l.name + "`";
    o << "| `" << m.name << "` | " << metricTypeName(m.type) << " | " << m.unit << " | "
      << (labels.empty() ? "-" : labels) << " |\n";
  }
  o << "\n## Details\n";
  for (const auto& m : catalog()) {
    o << "\n### `" << m.name << "`\n\n"
      << metricTypeName(m.type) << ", " << m.unit << ". " << m.help << "\n";
    if (!m.labels.empty()) {
      o << "\n";
      for (const auto& l : m.labels)
        o << "- `" << l.name << "`: " << l.help << ". Values: " << labelValuesText(l) << ".\n";
    }
    if (!m.buckets.empty()) {
      o << "\nBuckets (upper bounds, " << m.unit << "):";
      for (double b : m.buckets)
        o << " " << formatBound(b);
      o << ", +Inf. Series: `" << m.name << "_bucket`, `" << m.name << "_sum`, `" << m.name
        << "_count`.\n";
    }
  }
  return o.str();
}

std::string catalogJson() {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : catalog()) {
    nlohmann::json labels = nlohmann::json::array();
    for (const auto& l : m.labels)
      labels.push_back({{"name", l.name},
                        {"domain", domainName(l.domain)},
                        {"values", l.values},
                        {"help", l.help}});
    arr.push_back({{"name", m.name},
                   {"type", metricTypeName(m.type)},
                   {"unit", m.unit},
                   {"help", m.help},
                   {"labels", labels},
                   {"buckets", m.buckets}});
  }
  return arr.dump(2) + "\n";
}

}  // namespace tierd::telemetry

#pragma once
/// \file
/// The metric catalog: the ONE place where tierd's Prometheus metric names, types, units, help
/// texts and label sets are defined (names `tierd_<subsystem>_<what>_<unit>`, counters end in
/// `_total`: docs/metrics.md; the idea of dynolog's Metrics.cpp).
/// Exporters, docs/metrics.md (`tierctl metrics --catalog --markdown`), the dashboard tests and
/// every caller use it; nothing else spells a metric name.
///
/// Rules enforced by the catalog test: names are `tierd_<subsystem>_<what>_<unit>`, counters end
/// in `_total`, no per-host label (Prometheus adds `instance`), and every label value is bounded:
/// either a fixed list, a configured workload name, a NUMA node id, a catalog metric name or the
/// build's own version. Pids, paths and free text are never label values.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tierd/core/Types.h"

namespace tierd::telemetry {

/// Prometheus metric type. Counters only go up (by non-negative deltas); gauges are set.
enum class MetricType { Counter, Gauge, Histogram };

/// "counter", "gauge" or "histogram" (Prometheus TYPE names).
const char* metricTypeName(MetricType t);

/// Where a label's values come from; every domain is bounded.
enum class LabelDomain {
  Fixed,       ///< one of `LabelDef::values`
  Workload,    ///< a workload name from the config ([workloads] table), set with setWorkloads()
  Node,        ///< a NUMA node id in decimal, 0..kMaxNodeId (the machine's node ids)
  MetricName,  ///< the name of a catalog metric
  Build,       ///< fixed at build time (buildInfoLabels())
};

/// Highest NUMA node id accepted as a `node` label value (kernel MAX_NUMNODES is at most 1024).
inline constexpr int kMaxNodeId = 1023;

/// One label of a metric.
struct LabelDef {
  std::string name;
  LabelDomain domain = LabelDomain::Fixed;
  std::vector<std::string> values;  ///< allowed values when domain == Fixed, in display order
  std::string help;
};

/// Identifies a catalog entry; the catalog vector is indexed by it.
enum class MetricId : size_t {
  MigrateBytes,
  MigratePages,
  MigrateCallDuration,
  MigrateSystemCpu,
  DaemonErrors,
  DaemonCpu,
  DaemonTicks,
  DaemonLastTick,
  SamplerSamples,
  SamplerLostSamples,
  SamplerThrottleEvents,
  SamplerOverhead,
  SamplerPeriod,
  SamplerInterval,
  SamplerOpenPerfEvents,
  SamplerSourceRetries,
  SamplerBudgetBackoffs,
  SamplerPausedSeconds,
  PlacementSettled,
  TickInterval,
  HotnessHotBytes,
  HotnessColdBytes,
  WorkloadMemoryBytes,
  WorkloadMemorySource,
  WorkloadMigratedBytes,
  NodeCapacity,
  NodeUsed,
  NodeHugetlbPages,
  NodeHugetlbFreePages,
  ArbiterPingpongMoves,
  ArbiterPingpongHolds,
  ArbiterSkippedCandidates,
  MigrateThpSplitAfterMove,
  MigrateIdentityCheckFailures,
  ScopePidReuses,
  ConfigReloads,
  KernelCapability,
  KernelVmstatEvents,
  KernelMigrateOffloadEvents,
  BuildInfo,
  MetricsRejectedUpdates,
  Count,  ///< number of metrics; not a metric
};

/// A typed reference to a catalog metric: only a CounterHandle can be added to, only a
/// GaugeHandle set, only a HistogramHandle observed.
template <MetricType T>
struct MetricHandle {
  MetricId id;
};
using CounterHandle = MetricHandle<MetricType::Counter>;
using GaugeHandle = MetricHandle<MetricType::Gauge>;
using HistogramHandle = MetricHandle<MetricType::Histogram>;

/// One catalog entry.
struct MetricDef {
  MetricId id;
  std::string name;  ///< full Prometheus name, e.g. "tierd_migrate_bytes_total"
  MetricType type;
  std::string unit;  ///< "bytes", "pages", "seconds", "ratio", "events", "info", ...
  std::string help;  ///< one line: what, how measured, where the number comes from
  std::vector<LabelDef> labels;
  std::vector<double> buckets;  ///< histogram upper bounds, ascending (histograms only)
};

/// The handles callers use; the catalog gives each its name, labels and help (label order is
/// the order of the label values passed to MetricsSink).
namespace metric {
inline constexpr CounterHandle kMigrateBytes{MetricId::MigrateBytes};
inline constexpr CounterHandle kMigratePages{MetricId::MigratePages};
inline constexpr HistogramHandle kMigrateCallDuration{MetricId::MigrateCallDuration};
inline constexpr CounterHandle kMigrateSystemCpu{MetricId::MigrateSystemCpu};
inline constexpr CounterHandle kDaemonErrors{MetricId::DaemonErrors};
inline constexpr CounterHandle kDaemonCpu{MetricId::DaemonCpu};
inline constexpr CounterHandle kDaemonTicks{MetricId::DaemonTicks};
inline constexpr GaugeHandle kDaemonLastTick{MetricId::DaemonLastTick};
inline constexpr CounterHandle kSamplerSamples{MetricId::SamplerSamples};
inline constexpr CounterHandle kSamplerLostSamples{MetricId::SamplerLostSamples};
inline constexpr CounterHandle kSamplerThrottleEvents{MetricId::SamplerThrottleEvents};
inline constexpr GaugeHandle kSamplerOverhead{MetricId::SamplerOverhead};
inline constexpr GaugeHandle kSamplerPeriod{MetricId::SamplerPeriod};
inline constexpr GaugeHandle kSamplerInterval{MetricId::SamplerInterval};
inline constexpr GaugeHandle kSamplerOpenPerfEvents{MetricId::SamplerOpenPerfEvents};
inline constexpr CounterHandle kSamplerSourceRetries{MetricId::SamplerSourceRetries};
inline constexpr CounterHandle kSamplerBudgetBackoffs{MetricId::SamplerBudgetBackoffs};
inline constexpr CounterHandle kSamplerPausedSeconds{MetricId::SamplerPausedSeconds};
inline constexpr GaugeHandle kPlacementSettled{MetricId::PlacementSettled};
inline constexpr GaugeHandle kTickInterval{MetricId::TickInterval};
inline constexpr GaugeHandle kHotnessHotBytes{MetricId::HotnessHotBytes};
inline constexpr GaugeHandle kHotnessColdBytes{MetricId::HotnessColdBytes};
inline constexpr GaugeHandle kWorkloadMemoryBytes{MetricId::WorkloadMemoryBytes};
inline constexpr GaugeHandle kWorkloadMemorySource{MetricId::WorkloadMemorySource};
inline constexpr CounterHandle kWorkloadMigratedBytes{MetricId::WorkloadMigratedBytes};
inline constexpr GaugeHandle kNodeCapacity{MetricId::NodeCapacity};
inline constexpr GaugeHandle kNodeUsed{MetricId::NodeUsed};
inline constexpr GaugeHandle kNodeHugetlbPages{MetricId::NodeHugetlbPages};
inline constexpr GaugeHandle kNodeHugetlbFreePages{MetricId::NodeHugetlbFreePages};
inline constexpr CounterHandle kArbiterPingpongMoves{MetricId::ArbiterPingpongMoves};
inline constexpr CounterHandle kArbiterPingpongHolds{MetricId::ArbiterPingpongHolds};
inline constexpr CounterHandle kArbiterSkippedCandidates{MetricId::ArbiterSkippedCandidates};
inline constexpr CounterHandle kMigrateThpSplitAfterMove{MetricId::MigrateThpSplitAfterMove};
inline constexpr CounterHandle kMigrateIdentityCheckFailures{
    MetricId::MigrateIdentityCheckFailures};
inline constexpr CounterHandle kScopePidReuses{MetricId::ScopePidReuses};
inline constexpr CounterHandle kConfigReloads{MetricId::ConfigReloads};
inline constexpr GaugeHandle kKernelCapability{MetricId::KernelCapability};
inline constexpr CounterHandle kKernelVmstatEvents{MetricId::KernelVmstatEvents};
inline constexpr CounterHandle kKernelMigrateOffloadEvents{MetricId::KernelMigrateOffloadEvents};
inline constexpr GaugeHandle kBuildInfo{MetricId::BuildInfo};
inline constexpr CounterHandle kMetricsRejectedUpdates{MetricId::MetricsRejectedUpdates};
}  // namespace metric

/// The whole catalog, indexed by MetricId (catalog()[size_t(id)].id == id).
const std::vector<MetricDef>& catalog();

/// The entry of a handle or id.
const MetricDef& metricDef(MetricId id);

/// The entry with this exact name, or nullptr.
const MetricDef* findMetric(std::string_view name);

/// The /proc/vmstat counters exported as deltas by tierd_kernel_vmstat_events_total (the
/// `counter` label's fixed values): pgmigrate_*, pgpromote_*, pgdemote_*, thp_migration_*,
/// numa_pages_migrated. Keys a kernel lacks are simply not exported.
const std::vector<std::string>& vmstatCounterNames();

/// The counters of /sys/kernel/mm/migrate_offload/counters/ (kernel-patches/ patch 3) exported
/// as deltas by tierd_kernel_migrate_offload_events_total: batches, folios, bytes, fallbacks, and
/// hugetlb_folios (patch 6; absent before it).
const std::vector<std::string>& migrateOffloadCounterNames();

/// Label values of tierd_build_info: {version} (CMake PROJECT_VERSION).
std::vector<std::string> buildInfoLabels();

/// The `errno` label value of an errno: "EBUSY", "ENOMEM", ... or "other" (a fixed set).
std::string errnoLabel(int err);

/// The `page_size` label value of a page size in bytes: "4k", "2M", "1G", ... or "other".
std::string pageSizeLabel(uint64_t bytes);

/// The `direction` label value: "promote" or "demote".
std::string directionLabel(Direction d);

/// docs/metrics.md: a Markdown rendering of the whole catalog (deterministic).
std::string catalogMarkdown();

/// The catalog as JSON text (an array of {name,type,unit,help,labels,buckets}), pretty-printed.
std::string catalogJson();

}  // namespace tierd::telemetry

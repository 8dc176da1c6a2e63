#pragma once
/// \file
/// Plausible sample values for every catalog metric, for the exporter demo
/// (tierd-metrics-demo) and the real-Prometheus dashboard test: each call advances counters and
/// moves gauges so that rate() and histogram_quantile() over a few scrapes return series.

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/metrics/MetricsSink.h"

namespace tierd::telemetry {

/// Feeds rounds of demo values into a sink.
class DemoFeeder {
 public:
  /// Feeds the next round of values for every catalog metric into `sink`, with label values for
  /// the given workloads (which must be set with sink.setWorkloads first), nodes 0 (fast) and 1
  /// (slow), and each fixed label value the dashboards select on.
  void feed(MetricsSink& sink, const std::vector<std::string>& workloads);
  /// Rounds fed so far.
  uint64_t rounds() const { return step_; }

 private:
  uint64_t step_ = 0;
  VmstatDeltas vmstat_;
  VmstatDeltas offload_{metric::kKernelMigrateOffloadEvents, migrateOffloadCounterNames()};
};

}  // namespace tierd::telemetry

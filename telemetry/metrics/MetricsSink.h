#pragma once
/// \file
/// MetricsSink: where tierd's numbers go (docs/architecture.md, the seams). Callers use the typed
/// handles of Catalog.h, so a counter can only be added to, a gauge only set and a histogram only
/// observed. Label values are passed positionally in the catalog's label order and are checked
/// against their bounded domain before reaching an implementation: an update with an unknown
/// label value, a wrong label count, a negative counter delta or a non-finite value is dropped
/// and counted in tierd_metrics_rejected_updates_total{metric} (it is a bug in the caller, never
/// a reason to stop the daemon).
///
/// Threading: one thread (the tick loop) updates a sink; implementations make the values safe to
/// read concurrently (PrometheusSink's scrape threads). Updates never block on I/O.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/metrics/Catalog.h"

namespace tierd::telemetry {

/// Label values in catalog order.
using LabelValues = std::vector<std::string>;

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  /// Adds `delta` (>= 0, finite) to a counter series. Returns false when the update was dropped.
  bool add(CounterHandle h, std::initializer_list<std::string_view> labels, double delta);
  /// Sets a gauge series to `value` (finite). Returns false when dropped.
  bool set(GaugeHandle h, std::initializer_list<std::string_view> labels, double value);
  /// Records one observation (finite) in a histogram series. Returns false when dropped.
  bool observe(HistogramHandle h, std::initializer_list<std::string_view> labels, double value);

  /// Creates a histogram series with no observation yet (count 0, sum 0, every bucket 0), so it
  /// is on the first scrape like the counters tierd starts at 0; an existing series is left as
  /// it is. Returns false when dropped (labels out of their domain).
  bool declare(HistogramHandle h, std::initializer_list<std::string_view> labels);

  /// Vector forms of the above, for callers that build label values in a loop.
  bool add(CounterHandle h, const LabelValues& labels, double delta);
  bool set(GaugeHandle h, const LabelValues& labels, double value);
  bool observe(HistogramHandle h, const LabelValues& labels, double value);

  /// Replaces the allowed values of `workload` labels with the config's workload names (called
  /// at start and after each successful reload). Series of workloads no longer configured are
  /// removed from the sink (removeWorkloadSeries).
  void setWorkloads(const std::vector<std::string>& names);
  /// The configured workload names.
  const std::set<std::string>& workloads() const { return workloads_; }

  /// Number of updates dropped so far, and the reason for the last one ("" when none).
  uint64_t rejectedUpdates() const { return rejected_; }
  const std::string& lastRejection() const { return lastRejection_; }

  /// Checks label values against a metric's label domains; "" when valid, else the reason.
  std::string checkLabels(const MetricDef& def, const LabelValues& labels) const;

 protected:
  /// Implementations: apply an already validated update.
  virtual void doAdd(const MetricDef& def, const LabelValues& labels, double delta) = 0;
  virtual void doSet(const MetricDef& def, const LabelValues& labels, double value) = 0;
  virtual void doObserve(const MetricDef& def, const LabelValues& labels, double value) = 0;
  /// Implementations: create the histogram series if it does not exist (no observation).
  virtual void doDeclare(const MetricDef& def, const LabelValues& labels) = 0;
  /// Implementations: forget every series whose workload label is not in `keep`.
  virtual void removeWorkloadSeries(const std::set<std::string>& keep) = 0;

 private:
  bool accept(const MetricDef& def, const LabelValues& labels, double value, bool nonNegative);

  std::set<std::string> workloads_;
  uint64_t rejected_ = 0;
  std::string lastRejection_;
};

/// A sink for tests: records every accepted update in order (with the metric name), and keeps
/// the current value of each series the way Prometheus would (counters summed, gauges last,
/// histograms as count and sum).
class RecordingSink : public MetricsSink {
 public:
  enum class Op { Add, Set, Observe, Declare };
  struct Update {
    Op op;
    std::string metric;
    LabelValues labels;
    double value;
  };
  /// Accepted updates in call order.
  const std::vector<Update>& updates() const { return updates_; }
  /// Current value of a series (counter total, gauge value, histogram sum); 0 when absent.
  double value(std::string_view metric, const LabelValues& labels) const;
  /// Number of observations of a histogram series; 0 when absent.
  uint64_t count(std::string_view metric, const LabelValues& labels) const;
  /// True when the series exists.
  bool has(std::string_view metric, const LabelValues& labels) const;
  /// Number of series of a metric.
  size_t seriesCount(std::string_view metric) const;
  /// One line per update, "add tierd_x{a,b} 3" — for golden comparisons ("declare" with 0).
  std::string log() const;

 protected:
  void doAdd(const MetricDef& def, const LabelValues& labels, double delta) override;
  void doSet(const MetricDef& def, const LabelValues& labels, double value) override;
  void doObserve(const MetricDef& def, const LabelValues& labels, double value) override;
  void doDeclare(const MetricDef& def, const LabelValues& labels) override;
  void removeWorkloadSeries(const std::set<std::string>& keep) override;

 private:
  struct Series {
    double value = 0;
    uint64_t count = 0;
  };
  std::vector<Update> updates_;
  std::vector<std::pair<std::pair<std::string, LabelValues>, Series>> series_;
  Series* find(std::string_view metric, const LabelValues& labels);
  const Series* find(std::string_view metric, const LabelValues& labels) const;
};

/// Turns successive readings of kernel counters (totals since boot) into deltas of one catalog
/// counter whose `counter` label is the kernel's key. By default /proc/vmstat into
/// tierd_kernel_vmstat_events_total: the daemon reads the file (tierd/sys/Vmstat.h: readVmstat)
/// and passes the parsed key/value map; only the keys of `names` are used. The first reading sets
/// the baseline and creates the series at 0; a counter that goes backwards (impossible short of a
/// wrap) rebases.
class VmstatDeltas {
 public:
  /// /proc/vmstat's migration counters into tierd_kernel_vmstat_events_total.
  VmstatDeltas();
  /// Any other kernel counter set: `names` are the keys used (the metric's `counter` label
  /// values, in the catalog's fixed list).
  VmstatDeltas(CounterHandle metric, std::vector<std::string> names);
  /// Feeds one reading into `sink`.
  void update(const std::map<std::string, int64_t>& vmstat, MetricsSink& sink);

 private:
  CounterHandle metric_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, int64_t>> last_;
};

}  // namespace tierd::telemetry

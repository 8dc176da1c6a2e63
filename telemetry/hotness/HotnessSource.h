#pragma once
/// \file
/// HotnessSource: the seam between what observes memory accesses (perf_event PEBS/IBS or
/// software events, DAMON, a recorded trace) and the heat model (docs/architecture.md, the seams).
/// Called from one thread (the tick engine); no method blocks for longer than a sysfs read.

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/hotness/SourceNames.h"
#include "tierd/core/Result.h"
#include "tierd/core/Types.h"

namespace tierd::telemetry {

/// Counters every source keeps from `start` on. All are totals since start (monotonic).
struct SourceStats {
  uint64_t samples = 0;    ///< samples returned by drain()
  uint64_t lost = 0;       ///< samples the kernel dropped (PERF_RECORD_LOST counts; 0 for DAMON)
  uint64_t throttled = 0;  ///< PERF_RECORD_THROTTLE records (kernel lowered our rate)
  uint64_t discarded = 0;  ///< samples read but dropped by us (address 0, outside mappings)
  /// Times the source sampled less because its CPU over a window exceeded its budget
  /// (sampling.cpu_budget_percent): perf sources doubled their sample period, DAMON its
  /// kdamond's sampling interval (within its bounds).
  uint64_t budgetBackoffs = 0;
};

/// How often a caller that drains once a tick calls HotnessSource::collect() in between, ns: a
/// 64-page perf ring (PerfSamplerConfig::ringPages) holds about 3600 records of 72 bytes, so
/// collecting every 100 ms keeps up with about 36000 records per second and ring.
inline constexpr uint64_t kCollectIntervalNs = 100'000'000;

/// A source of AccessSamples. Lifecycle: start() once, drain() any number of times, stop() once
/// (also done by the destructor of every implementation). Not thread-safe.
class HotnessSource {
 public:
  virtual ~HotnessSource() = default;

  /// Short stable name used in traces, logs and probe output: a kSources name ("perf-pebs",
  /// "perf-ibs", "perf-sw-page-faults", "damon-vaddr", "replay"; SourceNames.h).
  virtual std::string name() const = 0;

  /// How the heat model counts this source's samples. Default: one access per sample.
  virtual WeightKind weightKind() const { return WeightKind::PerSample; }

  /// Opens kernel resources (perf events, a kdamond). Errors say what is missing and what to do;
  /// on error nothing stays open.
  virtual Status start() = 0;

  /// Returns, without blocking, every sample available now whose timeNs <= `untilNs`
  /// (CLOCK_MONOTONIC ns); later samples stay queued for the next call. An empty batch is
  /// normal. Errors only when the source broke (its fds or kdamond vanished).
  virtual Result<std::vector<AccessSample>> drain(uint64_t untilNs) = 0;

  /// Moves what the kernel has buffered for this source into the source's own queue without
  /// handing anything out, so that a bounded kernel buffer cannot fill between two drain() calls
  /// far apart (a perf ring drained once a tick loses records, PERF_RECORD_LOST, when the PMU
  /// writes more than it holds; IBS op sampling records every op, most of them no memory access).
  /// Callers that drain seldom call it in between (the daemon every kCollectIntervalNs). The
  /// default does nothing (DAMON keeps its own state in the kernel). Errors as drain().
  virtual Status collect() { return Ok{}; }

  /// Releases kernel resources. Idempotent; never fails (problems are counted, not thrown).
  virtual void stop() = 0;

  /// Totals since start().
  virtual SourceStats stats() const = 0;

  /// A short human-readable state for progress lines and logs ("sample_us=500 access=23%"),
  /// "" when the source has nothing to say.
  virtual std::string state() const { return {}; }

  /// Whether tierd's plan has had nothing to move for a while (Engine::kSettleTicks ticks in a
  /// row): a settled source may sample less, within sampling.settled_cpu_budget_percent, and
  /// must sample as before once told false (the plan has work again). Called by the engine once
  /// per tick, after planning, with the same value until it changes. The default ignores it
  /// (the perf sources keep cpu_budget_percent; DamonSource applies it).
  virtual void setSettled(bool settled) { (void)settled; }

  /// How long before a tick this source must be sampling again for that tick's drain() to hold
  /// a complete reading, ns (DamonSource: three aggregation intervals, so at least two whole
  /// aggregations); 0: the source cannot pause (the default; the perf sources, a DAMON kernel
  /// without contexts/0/pause). Read by the engine before a settled wait
  /// (sampling.settled_damon_window).
  virtual uint64_t pauseLeadNs() const { return 0; }

  /// Pauses (true) or resumes (false) sampling without losing what the source has learned
  /// (DamonSource: contexts/0/pause, the kdamond keeps its regions and sleeps). Only a source
  /// with pauseLeadNs() > 0 is paused; the engine resumes every paused source before the next
  /// tick's drain, and drain() resumes one itself if a resume failed. Idempotent. Errors: the
  /// write that failed (the source then keeps sampling, or stays paused until a retry works).
  virtual Status setPaused(bool paused) {
    (void)paused;
    return Ok{};
  }
};

}  // namespace tierd::telemetry

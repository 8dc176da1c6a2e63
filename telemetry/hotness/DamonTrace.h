#pragma once
/// \file
/// Reading DAMON's region access counts through the `damon:damon_aggregated` tracepoint
/// (include/trace/events/damon.h) instead of a stat scheme's tried regions: at the end of every
/// aggregation interval the kdamond emits one event per region of each target, in address order,
/// each carrying the target's region count (mm/damon/core.c kdamond_reset_aggregated). Its print
/// format, the same in 6.12 and 7.3:
///
///     target_id=%lu nr_regions=%u %lu-%lu: %u %u
///     (target_id, nr_regions, start, end, nr_accesses, age; addresses in decimal)
///
/// and a trace_pipe line of the tracefs instance looks like
///
///     kdamond.0-312     [001] .....    84.177004: damon_aggregated: target_id=0 nr_regions=3
///     140737353465856-140737355563008: 5 2
///
/// (one line, broken here; the task field is COMM-PID, the flags field's width differs between
/// kernels). tierd reads the event in a tracefs instance of its own (instances/tierd-KDAMOND_PID)
/// with a filter `common_pid == KDAMOND_PID`, so no other kdamond's events (the host's,
/// DAMON_STAT's) mix in, and no other tracer's settings change. The event's `format` file is
/// checked before use: a kernel whose fields or print format differ is not read this way.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tierd/core/Result.h"

namespace tierd::telemetry {

class DamonFs;

/// One region's access count at the end of an aggregation interval (from a tried region's
/// start/end/nr_accesses files or a damon_aggregated event). Addresses in bytes, [start, end).
struct DamonRegionCount {
  uint64_t start = 0, end = 0;
  uint64_t nrAccesses = 0;  ///< checks of this aggregation interval that saw the region accessed
};

/// One damon_aggregated event as printed in trace_pipe.
struct DamonAggregatedEvent {
  pid_t pid = 0;          ///< the emitting task's pid (the kdamond thread), from the COMM-PID field
  uint64_t targetId = 0;  ///< index of the target in its context (0: tierd's only target)
  uint64_t nrRegions = 0;  ///< regions of that target in this aggregation
  DamonRegionCount region;
  uint64_t age = 0;  ///< aggregation intervals the region kept its access pattern
};

/// Checks the text of events/damon/damon_aggregated/format: the fields target_id, nr_regions,
/// start, end, nr_accesses and age exist and the print fmt is the one parseDamonAggregated reads
/// ("target_id=%lu nr_regions=%u %lu-%lu: %u %u" over those fields, in that order). Error (Input,
/// context `path`) saying what differs.
Status checkDamonAggregatedFormat(const std::string& formatText, const std::string& path);

/// Parses trace_pipe (or `trace`) text: every damon_aggregated line becomes one event; comment
/// lines ('#'), other events and blank lines are skipped; a line that names damon_aggregated but
/// does not parse (or a last line without its newline) is counted in `*malformed` when given.
std::vector<DamonAggregatedEvent> parseDamonAggregated(const std::string& text,
                                                       uint64_t* malformed = nullptr);

/// What splitAggregations found.
struct DamonAggregations {
  /// Every complete aggregation in the events, oldest first; each one's regions are nr_regions
  /// consecutive events in address order. Empty when there is none.
  std::vector<std::vector<DamonRegionCount>> complete;
  /// The events after the last complete one that may begin an aggregation still being emitted
  /// (to be put in front of the next read): the trailing run when it is incomplete, else empty.
  std::vector<DamonAggregatedEvent> tail;
};

/// From events in trace order, keeps those of `pid` and target `targetId` and splits them into
/// aggregations: a run ends where an event's nr_regions differs from the run's, its start lies
/// below the previous event's end (the next walk of the regions began), or the run already holds
/// nr_regions events. A run of exactly nr_regions events is complete and returned. Runs cut short
/// (events lost to a full buffer, a read that began mid-aggregation) are skipped; the trailing
/// one is returned as `tail`.
DamonAggregations splitAggregations(const std::vector<DamonAggregatedEvent>& events, pid_t pid,
                                    uint64_t targetId);

/// The tracefs mount: "/sys/kernel/tracing" when its instances/ exists, else
/// "/sys/kernel/debug/tracing" when that one's does; nullopt when neither (tracefs not mounted).
std::optional<std::string> findTracefs(DamonFs& fs);

/// Removes the instances TRACEFS/instances/tierd-PID whose PID is no kdamond thread now
/// (/proc/PID/comm does not begin with "kdamond"): left by a tierd that died (instances outlive
/// their creator). Instances of live kdamonds and every other name are left alone. Best effort.
void removeStaleDamonTraceInstances(DamonFs& fs, const std::string& tracefs);

/// A tracefs instance of tierd's own with damon_aggregated enabled for one kdamond. Not
/// thread-safe; one owner. All file access through DamonFs.
class DamonTraceInstance {
 public:
  /// `fs` must outlive the instance.
  explicit DamonTraceInstance(DamonFs& fs) : fs_(fs) {}
  ~DamonTraceInstance() { close(); }
  DamonTraceInstance(const DamonTraceInstance&) = delete;
  DamonTraceInstance& operator=(const DamonTraceInstance&) = delete;

  /// Checks that tracing can work here without writing anything: tracefs mounted (findTracefs),
  /// its instances/ and events/damon/damon_aggregated/format present, the format as expected.
  /// Returns the tracefs mount, or an Environment/Unsupported/Input error saying what is missing.
  static Result<std::string> probe(DamonFs& fs);

  /// Creates TRACEFS/instances/tierd-KDAMOND_PID (first removing stale tierd-* instances,
  /// removeStaleDamonTraceInstances, and a leftover instance of this very name, from a tierd that
  /// died while a kdamond with the same pid was its own),
  /// writes buffer_size_kb (per CPU, KiB), the filter `common_pid == kdamondPid` and 1 to the
  /// event's enable. On any error everything done so far is undone and the error returned.
  Status open(const std::string& tracefs, pid_t kdamondPid, uint64_t bufferKb);
  /// Everything the instance's trace_pipe holds now, consumed, without blocking (DamonFs::
  /// readAvailable). Error when not open or the read fails.
  Result<std::string> readPipe();
  /// Disables the event and removes the instance directory; nothing when not open. Idempotent.
  void close();
  /// True between a successful open() and close().
  bool isOpen() const { return !dir_.empty(); }
  /// The instance directory (absolute), "" when not open.
  const std::string& dir() const { return dir_; }

 private:
  DamonFs& fs_;
  std::string dir_;
};

/// buffer_size_kb (per CPU) for three aggregations of `maxRegions` events of at most 64 bytes
/// each in the ring buffer (a damon_aggregated entry is 48 bytes of fields and header), at least
/// 64 KiB.
uint64_t damonTraceBufferKb(uint64_t maxRegions);

}  // namespace tierd::telemetry

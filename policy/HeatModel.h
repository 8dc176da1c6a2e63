#pragma once
/// \file
/// HeatModel: how hot each region of each workload is, from access samples.
///
/// Why: huge pages are the unit of migration (docs/architecture.md, principle 3), so heat is kept
/// per 2 MiB region (per 1 GiB for 1 GiB hugetlb pages), not per sample address. Each region holds
/// an exponentially decayed count of the samples that fell into it:
///     heat(t) = heat(t0) * 2^(-(t - t0) / half_life) + weight of each new sample,
/// so a region that stops being sampled loses half its heat every half-life, and the heat of a
/// region sampled at a steady rate r (samples/s) settles at r * half_life / ln 2. Decay is applied
/// lazily (each region remembers the time its heat refers to), which makes ingest O(log n) per
/// sample and decay exact however irregular the ticks. With huge pages even cold memory is
/// touched often (a THP's cold 2 MiB is seen accessed in most of DAMON's 5 ms checks when any of
/// it is touched every few ms: docs/tiering.md), so callers rank regions by heat against the fast
/// tier's capacity instead of trusting a fixed threshold; thresholds are only floors.
///
/// Time is always passed in (CLOCK_MONOTONIC ns); nothing here reads a clock. Memory is bounded:
/// a region costs 32 bytes (16 KiB per tracked GiB of 2 MiB regions, target <= 32 KiB), kept in
/// one sorted vector per process; regions are released when their workload, process or mapping
/// goes away, or when they are cold, unlocated and not held. The model also carries each
/// region's move history (last move, direction, ping-pong count) for cooldown and the ping-pong
/// guard, fed back by recordResults(). Not thread-safe: owned by the tick loop.

#include <sys/types.h>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "policy/RangeOutcome.h"
#include "policy/TickContext.h"
#include "tierd/core/Types.h"

namespace tierd::policy {

/// What one weighted batch stands for (HeatModel::ingest): a rate per tick of `tickNs` (DAMON's
/// accesses per aggregation) that held over `ticks` such ticks ending at the ingest's nowNs (the
/// daemon waited daemon.settled_interval, not daemon.interval). Each weight then counts as if
/// ingested once per tick, each decayed from its own tick to nowNs:
///     weight * (1 - 2^(-ticks * tickNs / half_life)) / (1 - 2^(-tickNs / half_life)),
/// so a region's heat after a long wait is what the same rate gave at the last of that many
/// regular ticks, and the workload's thresholds keep their meaning. ticks <= 1: weight as is.
struct TickSpan {
  double ticks = 1.0;   ///< the batch's covered time over tickNs (>= 1 to matter)
  uint64_t tickNs = 0;  ///< daemon.interval, ns; 0: weight as is
};

/// One mapping of a process (from /proc/PID/smaps: range, KernelPageSize, hugetlb or not).
struct Mapping {
  uint64_t start = 0;     ///< bytes, virtual address, inclusive
  uint64_t end = 0;       ///< bytes, exclusive
  uint64_t pageSize = 0;  ///< KernelPageSize in bytes; 2 MiB for THP-eligible anonymous memory
  bool hugetlb = false;   ///< hugetlbfs / MAP_HUGETLB mapping
};

/// Per-workload parameters of the model (from WorkloadPolicy).
struct HeatParams {
  uint64_t halfLifeNs = 10'000'000'000;  ///< heat halves after this long without samples
  uint64_t cooldownNs = 30'000'000'000;  ///< the ping-pong guard holds for 16 cooldowns
};

/// Counters of recordResults(), cumulative.
struct RecordStats {
  uint64_t moved = 0;         ///< ranges moved (or already there)
  uint64_t busy = 0;          ///< ranges that backed off after -EBUSY
  uint64_t gone = 0;          ///< ranges whose memory vanished (regions dropped)
  uint64_t noMemory = 0;      ///< ranges refused for lack of memory on the target
  uint64_t notAllowed = 0;    ///< ranges whose target was outside the task's cpuset.mems
  uint64_t denied = 0;        ///< ranges held after a permanent refusal
  uint64_t pingPongHeld = 0;  ///< regions held by the ping-pong guard
};

/// Counters of ingest(), cumulative.
struct IngestStats {
  uint64_t samples = 0;          ///< samples added to a region
  uint64_t unknownPid = 0;       ///< samples of pids not assigned to a workload (dropped)
  uint64_t outsideMappings = 0;  ///< samples outside every known mapping of their pid (dropped)
};

/// The heat model. Regions are identified by (pid, region start).
class HeatModel {
 public:
  /// Ping-pong guard: a region whose moves reverse direction this many times in a row, each
  /// within 4 cooldowns of the previous move, is held for 16 cooldowns.
  static constexpr int kPingPongFlips = 2;
  /// Busy back-off: after n Busy results in a row a region waits cooldown * 2^(n-1), at most
  /// 2^kMaxBusyDoublings cooldowns (pinned pages, e.g. RDMA/VFIO, stay -EBUSY for good).
  static constexpr int kMaxBusyDoublings = 4;
  /// Regions with less heat than this, no known node and no history are forgotten by decay().
  static constexpr double kForgetHeat = 1.0 / 64;
  /// Bytes of one region entry.
  static size_t regionEntryBytes();

  /// Adds or updates a workload. Changing the half-life keeps the heat as it is at that moment.
  void setWorkload(WorkloadId id, HeatParams params);
  /// Forgets a workload with all its processes and regions.
  void removeWorkload(WorkloadId id);
  /// Puts `pid` in workload `id` (which must be set). A pid that changes workload starts afresh.
  void assignPid(pid_t pid, WorkloadId id);
  /// Forgets a process and its regions (it exited or left its workload).
  void removePid(pid_t pid);
  /// Replaces the mappings of `pid` (any order; overlapping ones are an error: returns false and
  /// changes nothing). Regions outside every mapping are released; samples outside are dropped.
  /// Without mappings, every sample lands in a 2 MiB region.
  bool setMappings(pid_t pid, std::vector<Mapping> mappings);

  /// Adds each sample of a known pid to its region (weight 1 per sample; `useWeight` adds
  /// AccessSample::weight instead, for sources that report counts, e.g. DAMON). A sample's time
  /// is clamped to [region's time, nowNs]; 0 means nowNs.
  ///
  /// `span` (only with `useWeight`): see TickSpan.
  void ingest(std::span<const AccessSample> batch, uint64_t nowNs, bool useWeight = false,
              TickSpan span = TickSpan{1.0, 0});
  /// Brings every region's heat to `nowNs`, forgets cold unlocated regions, trims memory.
  void decay(uint64_t nowNs);
  /// Records where regions of `pid` live (from the migrator's locate(): node per region start).
  /// Unknown regions are created with heat 0 so that cold memory on the fast tier is visible.
  void setLocations(pid_t pid, std::vector<std::pair<uint64_t, NodeId>> regionNodes);
  /// The node held for the region of `pid` that starts at `start` (setLocations, or the last
  /// Moved / AlreadyThere result of recordResults); nullopt when no such region is tracked or
  /// its node is unknown.
  std::optional<NodeId> nodeOf(pid_t pid, uint64_t start) const;

  /// Feeds back executed moves, each by the PolicyReaction of its outcome (kMoveOutcomes in
  /// tierd/core/Migration.h): Moved/AlreadyThere set the node (Moved also the move time and
  /// ping-pong state) and end a busy back-off; Busy starts a back-off that doubles with each
  /// Busy result in a row (1, 2, 4 ... cooldowns, capped at 2^kMaxBusyDoublings; RegionView::
  /// retryAtNs), and so does NodeNotAllowed (counted apart: the cpuset may change); Gone drops
  /// the regions, Denied holds them, NoMemory only counts.
  void recordResults(std::span<const RangeOutcome> outcomes, uint64_t nowNs);

  /// The workload's regions at `nowNs`, sorted by (pid, start).
  std::vector<RegionView> regions(WorkloadId id, uint64_t nowNs) const;
  /// The `limit` hottest regions of the workload on `nodes` (heat descending, then pid, start).
  std::vector<RegionView> hottest(WorkloadId id, const std::vector<NodeId>& nodes, size_t limit,
                                  uint64_t nowNs) const;
  /// The `limit` coldest regions of the workload on `nodes` (heat ascending, then pid, start).
  std::vector<RegionView> coldest(WorkloadId id, const std::vector<NodeId>& nodes, size_t limit,
                                  uint64_t nowNs) const;

  size_t regionCount() const;  ///< regions tracked, all workloads
  /// Bytes of heap the model holds (region vectors' capacity, mappings, per-process and
  /// per-workload bookkeeping estimated at their node sizes).
  size_t modelBytes() const;
  /// Bytes of address space covered by tracked regions.
  uint64_t trackedBytes() const;

  const IngestStats& ingestStats() const { return ingestStats_; }
  const RecordStats& recordStats() const { return recordStats_; }

 private:
  struct Region {
    uint64_t start;       // region base (2 MiB or 1 GiB aligned)
    uint64_t updatedNs;   // time `heat` refers to
    uint64_t lastMoveNs;  // last move or back-off, 0 = never
    float heat;
    int16_t node;   // -1 unknown
    uint8_t flags;  // kGiant, kLastPromote, kHeld, kMovedOnce; bits 4-7: Busy results in a row
    uint8_t flips;  // direction reversals in a row
  };
  static constexpr uint8_t kGiant = 1, kLastPromote = 2, kHeld = 4, kMovedOnce = 8;
  static constexpr int kBusyShift = 4;  // Region::flags bits 4-7 count Busy results in a row
  static int busyStreak(const Region& r) { return r.flags >> kBusyShift; }
  struct Proc {
    WorkloadId workload = 0;
    std::vector<Mapping> mappings;  // sorted by start
    std::vector<Region> regions;    // sorted by start
  };
  struct Workload {
    HeatParams params;
  };

  const Mapping* findMapping(const Proc& p, uint64_t addr) const;
  double heatAt(const Region& r, uint64_t nowNs, uint64_t halfLifeNs) const;
  RegionView view(pid_t pid, const Proc& p, const Region& r, uint64_t nowNs) const;
  bool isHeld(const Proc& p, const Region& r, uint64_t nowNs) const;
  void insertRegions(Proc& p, std::vector<uint64_t> starts, uint64_t nowNs);
  Region* findRegion(Proc& p, uint64_t start);

  std::map<WorkloadId, Workload> workloads_;
  std::map<pid_t, Proc> procs_;
  IngestStats ingestStats_;
  RecordStats recordStats_;
};

}  // namespace tierd::policy

#pragma once
/// \file
/// What a migration did, per planned MoveRange and per batch (the Migrator seam),
/// and where pages live (Migrator::locate). These cross from tierd/migrate back to policy (busy
/// pages back off, gone ranges are dropped), to metrics and to tierctl. Plain data.

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "tierd/core/Types.h"

namespace tierd {

/// The fate of one page address given to the migrator, from move_pages(2)'s per-page status
/// (the man page; mm/migrate.c) or from the migrator's own decisions.
enum class MoveOutcome {
  Moved,         ///< status == target after the call, and the page was elsewhere before
  AlreadyThere,  ///< the page was on the target node already (not sent to the kernel)
  NotPresent,    ///< -ENOENT: not in the page tables (never touched, swapped), or -EFAULT inside
                 ///< a live VMA (the shared zero page, a special mapping): skipped, no failure
  Busy,          ///< -EBUSY: in use or under migration; retried once, then the caller backs off
  Gone,          ///< -EFAULT with no VMA there any more, or the process exited (ESRCH): the range
                 ///< is dropped
  Denied,        ///< -EACCES (shared page, needs MPOL_MF_MOVE_ALL) or -EPERM
  NoMemory,      ///< -ENOMEM: the target had no free page of this size; later pages of this size
                 ///< to that node in the batch are not sent and counted here too
  NotMigrated,   ///< counted in a positive move_pages return (kernel gave up on it) or still on
                 ///< another node after the call
  OtherError,    ///< any other errno (-EINVAL, ...) per page or for a failed call
  NotAttempted,  ///< deadline reached or stop requested before the page's call
  /// The target node is outside the task's cpuset.mems_allowed (/proc/PID/status
  /// Mems_allowed_list): a call-level -EACCES from move_pages (mm/migrate.c do_pages_move), or not
  /// sent because the migrator read Mems_allowed first. The process and range are fine: choose
  /// another target.
  NodeNotAllowed,
};

/// Number of MoveOutcome values (for arrays indexed by outcome).
inline constexpr size_t kMoveOutcomeCount = 11;

/// What the policy's heat model (policy/HeatModel.cpp recordResults) does with the regions of a
/// range whose outcome (the one the engine reduces a RangeResult to) is this.
enum class PolicyReaction {
  Moved,    ///< the region is on the target now: node, move history (ping-pong guard), busy
            ///< back-off ends
  Placed,   ///< the region was on the target already: node, busy back-off ends (no history)
  BackOff,  ///< back off for a cooldown, doubling with each repeat (the cpuset or page may change)
  Drop,     ///< forget the range's regions: the memory or the process is gone
  Hold,     ///< hold the regions: the move will never succeed
  Count,    ///< counted only (no free page of that size: the arbiter's headroom sees it next tick)
  None,     ///< nothing to learn: no range is reduced to this outcome
};

/// One row of the move-outcome vocabulary: every spelling of one MoveOutcome in one place.
struct MoveOutcomeInfo {
  MoveOutcome outcome;
  /// Stable lower-case name: JSON (tierctl bench migrate `statuses`, tierctl move `pages`).
  const char* name;
  /// The `result` label of tierd_migrate_pages_total / _bytes_total: the name, except that the
  /// two failures without a cause of their own share "failed", and "" where no page was moved or
  /// refused (not counted).
  const char* metricLabel;
  PolicyReaction reaction;  ///< what the heat model does (folded outcomes: see dominantOutcome)
};

/// The move-outcome vocabulary, indexed by MoveOutcome.
inline constexpr std::array<MoveOutcomeInfo, kMoveOutcomeCount> kMoveOutcomes = {{
    {MoveOutcome::Moved, "moved", "moved", PolicyReaction::Moved},
    {MoveOutcome::AlreadyThere, "already_there", "already_there", PolicyReaction::Placed},
    {MoveOutcome::NotPresent, "not_present", "", PolicyReaction::None},
    {MoveOutcome::Busy, "busy", "busy", PolicyReaction::BackOff},
    {MoveOutcome::Gone, "gone", "gone", PolicyReaction::Drop},
    {MoveOutcome::Denied, "denied", "denied", PolicyReaction::Hold},
    {MoveOutcome::NoMemory, "no_memory", "no_memory", PolicyReaction::Count},
    {MoveOutcome::NotMigrated, "not_migrated", "failed", PolicyReaction::BackOff},
    {MoveOutcome::OtherError, "other_error", "failed", PolicyReaction::None},
    {MoveOutcome::NotAttempted, "not_attempted", "", PolicyReaction::None},
    {MoveOutcome::NodeNotAllowed, "node_not_allowed", "node_not_allowed", PolicyReaction::BackOff},
}};

/// The vocabulary row of `o`.
constexpr const MoveOutcomeInfo& moveOutcomeInfo(MoveOutcome o) {
  return kMoveOutcomes[static_cast<size_t>(o)];
}

/// Stable lower-case name used in JSON (kMoveOutcomes `name`): "moved", "already_there",
/// "not_present", "busy", "gone", "denied", "no_memory", "not_migrated", "other_error",
/// "not_attempted", "node_not_allowed".
const char* moveOutcomeName(MoveOutcome o);

/// Per-outcome page counts.
struct OutcomeCounts {
  std::array<uint64_t, kMoveOutcomeCount> pages{};  ///< indexed by MoveOutcome

  uint64_t& operator[](MoveOutcome o) { return pages[static_cast<size_t>(o)]; }
  uint64_t operator[](MoveOutcome o) const { return pages[static_cast<size_t>(o)]; }
  uint64_t total() const;
};

/// What happened to one MoveRange of a batch. Page counts are in units of the page size the
/// migrator used for each address (one per THP / hugetlb page, one per base page elsewhere).
struct RangeResult {
  MoveRange range;             ///< as planned (pageSize as given by the caller)
  OutcomeCounts outcomes;      ///< pages by outcome
  uint64_t bytesMoved = 0;     ///< bytes of pages counted Moved
  bool dropped = false;        ///< the range (or its process) is gone: do not plan it again
  std::vector<uint64_t> busy;  ///< addresses still -EBUSY after the retry (caller backs off)
};

/// The one outcome the policy learns from for a range, first of: Gone (or dropped),
/// NodeNotAllowed, Denied, NoMemory, Busy (also for addresses still busy and NotMigrated pages),
/// Moved, AlreadyThere. nullopt: nothing to learn (not attempted before the deadline, nothing
/// present to move, or only other errors).
std::optional<MoveOutcome> dominantOutcome(const RangeResult& r);

/// One move_pages(2) call with target nodes (not the nodes=NULL status queries): what the
/// per-call metrics observe. Each call carries pages of one direction only (the migrator splits
/// its calls where the direction changes).
struct MoveCallRecord {
  Direction direction = Direction::Promote;
  int64_t wallNs = 0;       ///< CLOCK_MONOTONIC around this call alone (no waits, no queries)
  int64_t kernelCpuNs = 0;  ///< the thread's ru_stime (RUSAGE_THREAD) around this call alone
  uint64_t bytesSent = 0;   ///< bytes of the pages passed to the call (page size each)
};

/// Totals of one batch (one Migrator::execute call).
struct MigrationStats {
  uint64_t pagesMoved = 0;
  uint64_t bytesMoved = 0;             ///< bytes copied to the target node
  uint64_t queryCalls = 0;             ///< move_pages(nodes=NULL) calls
  uint64_t moveCalls = 0;              ///< move_pages calls with target nodes
  uint64_t failedCalls = 0;            ///< calls that returned < 0
  uint64_t partialReturns = 0;         ///< calls that returned > 0
  uint64_t partialPages = 0;           ///< sum of the positive returns
  std::map<int, uint64_t> errnoPages;  ///< errno (positive, e.g. EBUSY) -> pages with that status
  std::map<int, uint64_t> errnoCalls;  ///< errno -> calls that failed with it
  int64_t wallNs = 0;                  ///< wall time of the batch (monotonic clock)
  int64_t kernelCpuNs = 0;             ///< CPU time the calling thread spent in the kernel
                                       ///< (getrusage(RUSAGE_THREAD).ru_stime difference)
  int64_t maxCallNs = 0;               ///< longest single move_pages call (latency bound check)
  /// Every move call of the batch, in order (wallNs above also counts rate-budget waits,
  /// busy back-offs, planning reads and status queries; these do not).
  std::vector<MoveCallRecord> moveCallRecords;
  bool deadlineReached = false;  ///< pages were left NotAttempted because of the deadline
  bool stopped = false;          ///< pages were left NotAttempted because stop was requested

  /// Copy throughput: bytesMoved / wallNs in GiB/s (0 when nothing moved).
  double gibPerSecond() const;
  /// Kernel CPU seconds per GiB moved (0 when nothing moved).
  double cpuSecondsPerGib() const;
};

/// Result of Migrator::execute: one RangeResult per input MoveRange, same order.
struct BatchResult {
  std::vector<RangeResult> ranges;
  MigrationStats stats;
};

/// A virtual address range [start, start + length) of one process, bytes.
struct AddressRange {
  uint64_t start = 0;
  uint64_t length = 0;
};

/// A run of consecutive pages with the same answer: [start, start + length) all have `status`,
/// which is a node id (>= 0) or the negative errno move_pages(nodes=NULL) gives per page
/// (-ENOENT not present, -EFAULT no VMA or zero page). `pageSize` is the page unit the answer
/// was established at: the hugetlb or THP size when one query answered a whole huge page, the
/// base page size otherwise.
struct LocatedRun {
  uint64_t start = 0;
  uint64_t length = 0;
  uint64_t pageSize = 0;
  int status = 0;
};

/// Where a process's pages live, as runs in the order of the requested ranges (each range
/// covered exactly once, ascending inside a range).
struct LocateResult {
  std::vector<LocatedRun> runs;
  uint64_t queryCalls = 0;    ///< move_pages(nodes=NULL) calls made
  uint64_t queriedPages = 0;  ///< addresses passed to those calls
  uint64_t skippedBytes = 0;  ///< bytes answered from numa_maps without a query
  uint64_t pagemapPages = 0;  ///< base pages checked in /proc/PID/pagemap instead of queried
  /// Of those, pages whose node came from their pagemap page frame number and the memory block
  /// map (PageSystem::memoryBlockNodes) instead of a query.
  uint64_t pfnPages = 0;
  /// Sparse ranges larger than MigratorConfig::locateMaxScanBytes (e.g. an ASan shadow
  /// reservation of terabytes) that were not scanned: they are NOT covered by `runs`.
  std::vector<AddressRange> unscanned;

  /// The per-base-page view: one status per `basePageSize` page, in run order (what the naive
  /// query of every base page address would give, when `unscanned` is empty).
  std::vector<int> perBasePage(uint64_t basePageSize) const;
};

}  // namespace tierd

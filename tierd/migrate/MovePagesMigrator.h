#pragma once
/// \file
/// MovePagesMigrator: the production Migrator. Runs on a PageSystem (the live kernel through
/// libnuma's numa_move_pages, or FakePageSystem in tests), so every rule below is unit-tested.
///
/// execute():
///   1. Plans each range against /proc/PID/smaps (read once per pid and call, or the one the
///      caller read this tick: ProcReads::smaps; on a tick that reuses the caller's last
///      full read, that read's layout for ranges with no THP: ProcReads::layout, where a
///      VMA's old Rss never counts as nothing resident): one address per hugetlb page
///      (KernelPageSize), one per PMD THP where the VMA's AnonHugePages covers all its resident
///      memory (Rss); where it covers only part, the head address of each aligned 2 MiB chunk, then
///      (after the heads) the chunk's other base pages re-queried and sent only if still elsewhere;
///      one per base page elsewhere (one address per THP: move_pages(2) answers -EBUSY for its
///      later subpages; never assume 4 KiB). Parts of a range with no VMA are Gone and drop the
///      range. Base-page VMAs with Rss 0 are NotPresent without a call; sparse ones (Rss < half the
///      VMA) send only the pages /proc/PID/pagemap shows mapped (parts larger than
///      locateMaxScanBytes: NotAttempted).
///   2. Queries up to maxPagesPerCall pages at a time (move_pages nodes=NULL, cheap: pages already
///      on the target are AlreadyThere and not sent, -ENOENT pages are NotPresent), then moves the
///      rest in calls sized to a latency target: bytes per call = latency target / measured ns
///      per byte (EWMA of earlier move calls), at least one page and minBytesPerCall (a copy
///      engine's minimum batch), at most maxPagesPerCall.
///   Targets outside the task's Mems_allowed (PageSystem::memsAllowed, read once per pid per
///   batch at planning) are not sent: NodeNotAllowed without a call.
///   3. A per-direction byte-rate budget (token bucket, debt allowed, burst <= 1 s) is waited for
///      before each move call; the deadline and the stop flag are checked between calls.
///   4. Every result is read, and every status the kernel wrote is kept: a failed call (ESRCH: the
///      process is gone, all its ranges drop; EPERM, or EACCES on a query: denied; others: the
///      call's pages are OtherError); a move call that failed at one node group (-ENOMEM, or
///      -EACCES for a target outside the task's cpuset: NodeNotAllowed, or -ENODEV for a target
///      whose memory was taken offline: OtherError; the process and its ranges stay; see
///      groupFailed; mm/migrate.c
///      do_pages_move returns at the first failing run of same-target entries, earlier runs stay
///      moved with their statuses, later runs are not attempted and are sent again); a positive
///      return (the entries the kernel left unwritten are re-queried to learn which moved); and
///      each status[i]. -EFAULT drops the range when /proc/PID/maps (re-read once per such call)
///      has no VMA there any more; inside a live VMA it is the shared zero page (or an unmovable
///      special mapping): NotPresent; -ENOMEM stops sending that page size to that node for the
///      rest of the batch; -EBUSY pages are retried after a back-off (busyRetries times), then
///      reported.
///
/// locate(): reads maps and numa_maps (and smaps, when needed and not shared); a VMA whose
/// numa_maps counts cover every page on one node is answered without a query; hugetlb VMAs are
/// queried one address per huge page; THP VMAs whose Rss is all AnonHugePages one address per 2 MiB
/// chunk (a chunk whose first address is not present is checked in /proc/PID/pagemap: nothing
/// mapped means all -ENOENT, a mapped zero page means a per-base-page query; chunks not wholly
/// inside the VMA are queried per base page); everything else per base page. Per base page, when
/// the PageSystem has a memory block map (PageSystem::memoryBlockNodes: sysfs) the pages are
/// read from /proc/PID/pagemap first: not present is -ENOENT; present, mapped exactly once
/// (PM_MMAP_EXCLUSIVE, which the shared zero page, the huge zero page and special mappings never
/// have), with a page frame number in a block listed under one node, and not a file page in a
/// VMA without a file (the huge zero page's mark on older kernels), is that node; every other
/// present page (shared, no PFN shown: a reader without CAP_SYS_ADMIN, a block on two nodes or
/// none) is queried. A pagemap entry costs a fraction of a query (~5 ns against ~65 ns on a
/// 4 KiB page here). The daemon drops CAP_SYS_ADMIN (sys::daemonCapabilities), so there
/// LinuxPageSystem offers no block map and every page is queried; `tierctl locate` run as root
/// reads frames. The result equals the naive per-base-page query exactly (tested, and checked by
/// `tierctl bench locate`).

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tierd/migrate/Migrator.h"
#include "tierd/migrate/ProcReads.h"

namespace tierd::migrate {

/// The production Migrator (see the file comment). Not thread-safe; one per tick thread.
class MovePagesMigrator final : public Migrator {
 public:
  /// `system` defaults to the live kernel (makeLinuxPageSystem()). `reads`: what the caller
  /// read of a process's /proc files this tick (ProcReads), planned and located on instead of
  /// reading them again; null: every read is the migrator's own.
  explicit MovePagesMigrator(MigratorConfig config = {}, std::unique_ptr<PageSystem> system = {},
                             std::shared_ptr<const ProcReads> reads = {});

  BatchResult execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                      const std::atomic<bool>* stop = nullptr) override;
  Result<LocateResult> locate(pid_t pid, const std::vector<AddressRange>& ranges) override;
  Result<LocateResult> locatePages(pid_t pid, const std::vector<AddressRange>& ranges) override;
  int64_t nowNs() override { return sys_->nowNs(); }
  /// Checked before every moving move_pages call (not before status queries, which change
  /// nothing); a false answer counts the call's pages Gone and drops the pid's other ranges.
  void setProcessCheck(ProcessCheck check) override { processCheck_ = std::move(check); }
  /// Takes the new call latency target and byte rates into config(). The token buckets keep
  /// their balance (debt included); a bucket holds at most one second of its new rate.
  void setLimits(const MigrationLimits& limits) override;
  void setMinBytesPerCall(uint64_t bytes) override { config_.minBytesPerCall = bytes; }

  /// The PageSystem underneath (for benches and tests).
  PageSystem& system() { return *sys_; }
  const MigratorConfig& config() const { return config_; }
  /// Bytes the next call will gather (latency target / measured ns per byte, clamped; at least
  /// minBytesPerCall).
  uint64_t bytesPerCall() const;

 private:
  struct PageRef {
    size_t range = 0;
    uint64_t addr = 0;
    uint64_t pageSize = 0;
    bool chunkHead = false;  // head address of a 2 MiB chunk of a partly huge VMA
    bool chunkTail = false;  // another base page of such a chunk (sent only if still elsewhere)
  };
  struct Segment {
    size_t range = 0;
    uint64_t start = 0;
    uint64_t pageSize = 0;
    uint64_t count = 0;
    bool mixed = false;  // THP-sized chunks of a partly huge VMA: tails follow (moveChunkTails)
  };
  enum class PidState { Ok, Gone, Denied };
  struct BatchState;

  void planRange(BatchState& st, size_t index);
  bool planSparse(BatchState& st, size_t index, uint64_t a, uint64_t b);
  std::vector<PageRef> processCall(BatchState& st, pid_t pid, const std::vector<PageRef>& call);
  std::vector<PageRef> moveSubBatch(BatchState& st, pid_t pid, const std::vector<PageRef>& send,
                                    std::vector<PageRef>& busy);
  std::vector<PageRef> groupFailed(BatchState& st, pid_t pid, const std::vector<PageRef>& send,
                                   const std::vector<int>& nodes, const std::vector<int>& status,
                                   int err, std::vector<PageRef>& busy);
  bool halted(BatchState& st);
  /// After the head addresses of partly huge VMAs' chunks: re-queries each chunk's other base
  /// pages (move_pages nodes=NULL) and sends those still elsewhere; a head that turns out to
  /// have been a base page is counted as one base page moved, not a THP.
  void moveChunkTails(BatchState& st);
  void callFailed(BatchState& st, pid_t pid, const std::vector<PageRef>& pages, long err);
  void classify(BatchState& st, const PageRef& p, int status, bool moveCall,
                std::vector<PageRef>& busy, bool liveVma);
  std::vector<bool> liveVmas(pid_t pid, const std::vector<PageRef>& pages,
                             const std::vector<int>& status);
  bool waitForBudget(BatchState& st, const std::vector<PageRef>& pages);

  // locate(), one VMA part [a, b) at a time, by the cheapest way that tells each page's node.
  struct LocateState;
  Status locateInVma(LocateState& st, const sys::SmapsVma& v, uint64_t a, uint64_t b);
  Status locatePerBasePage(LocateState& st, const sys::SmapsVma& v, uint64_t a, uint64_t b);
  Status queryBasePages(LocateState& st, uint64_t a, uint64_t b);
  Status locatePerHugePage(LocateState& st, uint64_t a, uint64_t b, uint64_t psz);
  Status locateSparse(LocateState& st, const sys::SmapsVma& v, uint64_t a, uint64_t b);
  Status locateByPagemap(LocateState& st, const sys::SmapsVma& v, uint64_t a, uint64_t b);
  // The memory block map for this locate() call: re-read when older than kBlockMapMaxAgeNs,
  // nullptr when the PageSystem has none.
  const sys::MemoryBlockNodes* blockMap();
  Status locateThpChunks(LocateState& st, const sys::SmapsVma& v, uint64_t a, uint64_t b);

  using SmapsSnapshot = ProcReads::SmapsSnapshot;
  using NumaMapsSnapshot = ProcReads::NumaMapsSnapshot;

  /// This tick's smaps of `pid` (ProcReads::smaps), else a fresh read (PageSystem::smaps)
  /// wrapped the same way.
  Result<SmapsSnapshot> smapsOf(pid_t pid);
  /// The layout kept for `r.pid` (ProcReads::layout) when execute() may plan `r` on it: no smaps
  /// read for the pid this tick, and every VMA `r` overlaps hugetlb or without THP in it.
  /// nullptr: plan on smapsOf().
  const std::vector<sys::SmapsVma>* layoutFor(const MoveRange& r) const;

  MigratorConfig config_;
  std::unique_ptr<PageSystem> sys_;
  std::shared_ptr<const ProcReads> reads_;  ///< the caller's reads of this tick; may be null
  ProcessCheck processCheck_;
  double nsPerByte_ = 0;       ///< EWMA of move call time per byte sent; 0 = not measured yet
  double tokens_[2] = {0, 0};  ///< budget bytes per Direction (may go negative: debt)
  int64_t tokensAtNs_[2] = {0, 0};
  /// PageSystem::memoryBlockNodes() as last read (nullopt: not read yet or not available) and
  /// when (nowNs()); re-read at most every kBlockMapMaxAgeNs, so memory onlined since (a CXL
  /// block given to a node) is known within that time.
  std::optional<sys::MemoryBlockNodes> blocks_;
  std::optional<int64_t> blocksReadAtNs_;
  static constexpr int64_t kBlockMapMaxAgeNs = 1'000'000'000;
};

/// The naive query, for comparison: move_pages(pid, every base page address of `ranges`,
/// nodes=NULL) in calls of at most `addressesPerCall` addresses. One status per base page.
/// Errors: a failed call (e.g. ESRCH) as an Environment error naming the pid.
Result<std::vector<int>> naiveLocate(PageSystem& system, pid_t pid,
                                     const std::vector<AddressRange>& ranges,
                                     uint64_t addressesPerCall = 1u << 20);

}  // namespace tierd::migrate

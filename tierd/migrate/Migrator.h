#pragma once
/// \file
/// The Migrator seam (docs/architecture.md, the seams) and the narrower PageSystem seam under it.
///
/// Migrator: what the tick engine, tierctl and tests call. `execute` moves a batch of planned
/// ranges, bounded by a deadline and a stop flag checked between move_pages calls; `locate`
/// answers which node holds each page.
///
/// PageSystem: the kernel surface the migrator needs (move_pages, /proc/PID/{maps,smaps,numa_maps},
/// the clocks). LinuxPageSystem is the real one; FakePageSystem (ModelKernelMigrator.h) models the
/// kernel's page table and error behaviour, so the same engine runs in unit tests.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "tierd/core/Migration.h"
#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/sys/MemoryBlocks.h"
#include "tierd/sys/ProcMaps.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::migrate {

/// The migrator limits a running daemon takes from its config, so a reload (SIGHUP) changes them:
/// [migration] call_latency_target, max_promote_mib_per_s and max_demote_mib_per_s, in the units
/// of MigratorConfig's fields of the same names.
struct MigrationLimits {
  int64_t callLatencyTargetNs = 20'000'000;  ///< MigratorConfig::callLatencyTargetNs
  uint64_t promoteBytesPerSecond = 0;        ///< MigratorConfig::promoteBytesPerSecond; 0 = none
  uint64_t demoteBytesPerSecond = 0;         ///< MigratorConfig::demoteBytesPerSecond; 0 = none
  bool operator==(const MigrationLimits&) const = default;
};

/// Moves pages between nodes and locates them. Called from one thread (the tick thread or a
/// tierctl command); implementations are not thread-safe. Never throws; a vanished process, a
/// full node or a busy page is counted in the result, never an error.
class Migrator {
 public:
  virtual ~Migrator() = default;

  /// Executes `batch` in order. Blocks the caller (and each target process, for at most about the
  /// configured call latency at a time) until done, `deadlineNs` (on nowNs()'s clock) passes, or
  /// `*stop` becomes true; both are checked between move_pages calls. Returns one RangeResult per
  /// input range, same order, plus batch stats. Pages not reached are NotAttempted.
  virtual BatchResult execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                              const std::atomic<bool>* stop = nullptr) = 0;

  /// Which node holds each page of `ranges` of process `pid`. The per-base-page expansion of the
  /// result equals what move_pages(pid, every base page address, nodes=NULL) returns.
  /// Errors: the process cannot be read (gone: Environment ESRCH/ENOENT; denied: EACCES).
  virtual Result<LocateResult> locate(pid_t pid, const std::vector<AddressRange>& ranges) = 0;

  /// The same per-base-page answer as locate() (runs of base pages: no page size beyond the
  /// base page is told), from move_pages(pid, every base page address, nodes=NULL) alone: no
  /// /proc/PID/maps read, nor smaps or numa_maps (each a walk of the whole process's page
  /// tables: ~0.2-0.5 s for a 700 MiB redis under TCG). For a few small ranges of a process whose
  /// layout the caller already knows (the engine's re-read of the ranges a move left uncertain):
  /// one query per base page, so not for hugetlb mappings, where locate() asks once per huge page.
  /// An address outside every VMA answers -EFAULT, as the query does. Errors: as locate(). The
  /// default implementation calls locate().
  virtual Result<LocateResult> locatePages(pid_t pid, const std::vector<AddressRange>& ranges) {
    return locate(pid, ranges);
  }

  /// The clock deadlines are expressed on: CLOCK_MONOTONIC nanoseconds (simulated in fakes).
  virtual int64_t nowNs() = 0;

  /// Answers whether `pid` still names the process the batch was planned for (pid reuse:
  /// scope::ProcessHandle::stillSame). Called on the executing thread right before each
  /// move_pages(2) call that moves pages; false makes the pid Gone for the rest of the batch.
  using ProcessCheck = std::function<bool(pid_t pid)>;
  /// Installs the check used by execute() (empty: no check). The default implementation ignores
  /// it, for migrators that never call move_pages.
  // By value for the overrides, which move it into their member:
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual void setProcessCheck(ProcessCheck check) { (void)check; }

  /// Replaces the limits a config reload may change (MigrationLimits). Called on the executing
  /// thread between execute() calls (the engine does it at a tick boundary, Engine::setConfig);
  /// the next execute() uses them. The default implementation ignores them, for migrators
  /// without limits.
  virtual void setLimits(const MigrationLimits& limits) { (void)limits; }

  /// Sets the floor of the bytes gathered into one move_pages(2) call (MigratorConfig::
  /// minBytesPerCall): the engine passes the copy engine's min_batch_bytes of a kernel with
  /// kernel-patches/ patch 3 while offload serves move_pages (smaller calls copy on the CPU),
  /// 0 otherwise. Called on the executing thread between execute() calls. The default
  /// implementation ignores it.
  virtual void setMinBytesPerCall(uint64_t bytes) { (void)bytes; }
};

/// The kernel surface under the migration engine. One implementation per environment.
class PageSystem {
 public:
  virtual ~PageSystem() = default;

  /// move_pages(2) semantics exactly: `nodes == nullptr` queries. Returns the syscall's return
  /// value when >= 0, or -errno when the call failed. `status` has `count` entries.
  virtual long movePages(pid_t pid, uint64_t count, void** pages, const int* nodes, int* status,
                         int flags) = 0;
  /// /proc/PID/maps (no page-table walk).
  virtual Result<std::vector<sys::SmapsVma>> maps(pid_t pid) = 0;
  /// /proc/PID/smaps (walks the page tables).
  virtual Result<std::vector<sys::SmapsVma>> smaps(pid_t pid) = 0;
  /// /proc/PID/numa_maps (walks the page tables).
  virtual Result<std::vector<sys::NumaMapsVma>> numaMaps(pid_t pid) = 0;
  /// /proc/PID/pagemap entries of `pages` base pages from `start` (Documentation/admin-guide/mm/
  /// pagemap.rst: bit 63 present, bit 62 swapped). Errors: Environment with errno and path.
  virtual Result<std::vector<uint64_t>> pagemap(pid_t pid, uint64_t start, uint64_t pages) = 0;
  /// The node of each memory block (sys::readMemoryBlockNodes: sysfs), so that the page frame
  /// number of a pagemap entry (bits 0-54, shown only to a reader with CAP_SYS_ADMIN) tells the
  /// page's node. The default implementation answers Environment ("not available"): locate()
  /// then asks move_pages for every page, as without the map.
  virtual Result<sys::MemoryBlockNodes> memoryBlockNodes() {
    return Error::env("no memory block map", "PageSystem");
  }
  /// The nodes `pid` may allocate on: its cpuset.mems_allowed, from /proc/PID/status
  /// Mems_allowed_list (sys::readMemsAllowed). move_pages to a node outside it fails the call
  /// with -EACCES. Errors: Environment (ENOENT/ESRCH: the process is gone) or Input.
  virtual Result<std::set<NodeId>> memsAllowed(pid_t pid) = 0;
  /// Base page size in bytes (sysconf(_SC_PAGESIZE)): 4 KiB on x86-64, 64 KiB on some arm64.
  virtual uint64_t basePageSize() = 0;
  /// PMD THP size in bytes (/sys/kernel/mm/transparent_hugepage/hpage_pmd_size).
  virtual uint64_t thpSize() = 0;
  /// CLOCK_MONOTONIC in nanoseconds.
  virtual int64_t nowNs() = 0;
  /// Sleeps until `ns` on nowNs()'s clock (returns at once when it has passed), or until `*stop`
  /// becomes true, whichever comes first: the flag is checked at least every kStopPollNs
  /// (nullptr: never checked). Returns true when `ns` was reached, false when the stop flag
  /// ended the sleep early. Called on the migrating thread; blocks it.
  virtual bool sleepUntilNs(int64_t ns, const std::atomic<bool>* stop) = 0;
  /// CPU time the calling thread has spent in the kernel, nanoseconds (RUSAGE_THREAD ru_stime).
  virtual int64_t threadKernelCpuNs() = 0;
};

/// Bits of a /proc/PID/pagemap entry (Documentation/admin-guide/mm/pagemap.rst).
inline constexpr uint64_t kPagemapPresent = 1ull << 63;    ///< page present in RAM
inline constexpr uint64_t kPagemapFile = 1ull << 61;       ///< file page or shared anon (not anon)
inline constexpr uint64_t kPagemapExclusive = 1ull << 56;  ///< page mapped exactly once
inline constexpr uint64_t kPagemapPfnMask = (1ull << 55) - 1;  ///< PFN when present (else 0)

/// Longest a PageSystem::sleepUntilNs with a stop flag sleeps without looking at the flag: a
/// SIGTERM during a rate-budget wait is acted on within this time (10 ms).
inline constexpr int64_t kStopPollNs = 10'000'000;

/// The live kernel: libnuma numa_move_pages, /proc under `root`, real clocks.
std::unique_ptr<PageSystem> makeLinuxPageSystem(sys::SysRoot root = sys::SysRoot::live());

/// Tuning of MovePagesMigrator. Units are in the names.
struct MigratorConfig {
  int64_t callLatencyTargetNs = 20'000'000;    ///< aim for each move_pages call to take ~20 ms
  uint64_t initialBytesPerCall = 16ull << 20;  ///< first call size before any measurement
  uint64_t maxPagesPerCall = 1u << 16;         ///< hard cap on addresses per call
  /// Floor of the bytes per move call, above the latency target's size (copy offload's
  /// /sys/kernel/mm/migrate_offload/min_batch_bytes: smaller calls are not offloaded); 0 = none.
  /// maxPagesPerCall still caps a call.
  uint64_t minBytesPerCall = 0;
  uint64_t promoteBytesPerSecond = 0;  ///< byte-rate budget for Direction::Promote; 0 = none
  uint64_t demoteBytesPerSecond = 0;   ///< byte-rate budget for Direction::Demote; 0 = none
  int busyRetries = 1;                 ///< how often -EBUSY pages are retried at batch end
  int64_t busyBackoffNs = 1'000'000;   ///< wait before retrying -EBUSY pages
  /// locate() and execute(): largest sparse VMA part scanned through /proc/PID/pagemap (8 bytes
  /// read per base page, ~5 ns each); larger ones are returned in LocateResult::unscanned, or
  /// counted NotAttempted by execute().
  uint64_t locateMaxScanBytes = 64ull << 30;
  bool moveShared = false;  ///< MPOL_MF_MOVE_ALL (needs CAP_SYS_NICE) instead of MPOL_MF_MOVE
};

/// Number of libnuma numa_error()/numa_warn() calls swallowed so far (NumaHooks.cpp overrides
/// libnuma's weak hooks so it never prints or exits behind us).
uint64_t libnumaHookCalls();

}  // namespace tierd::migrate

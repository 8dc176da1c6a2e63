#pragma once
/// \file
/// FakePageSystem: the kernel side of migration as a model, for tests and golden logs. It keeps a
/// page table (pid, page) -> node with per-VMA page size (base, PMD THP, hugetlb), per-node free
/// capacity per page size and per-process Mems_allowed, and answers move_pages(2) the way
/// mm/migrate.c does (do_pages_move, add_page_for_migration): per page -EFAULT without a VMA or for
/// the zero page, -ENOENT for a not-present page, -EBUSY for a second address of a huge page
/// already handled in the same call; the pages array is handled in node groups (runs of entries
/// with the same target, do_pages_move), and the call fails at the first failing group: -ENOMEM
/// when the target has no free page of that size (the group's earlier pages stay moved, its
/// statuses and those of later groups are not written; never a per-page -ENOMEM), -EACCES for a
/// target outside the task's Mems_allowed, -ENODEV for a node that does not exist (earlier groups
/// stay moved, with their statuses); -ESRCH for the whole call once the process exited, a positive
/// return with the unreached status entries left unwritten for scripted partial calls. It renders
/// maps, smaps and numa_maps from the same table. Time is simulated: each call advances the clock
/// (and the thread's kernel CPU time) by a fixed cost, and sleeps jump the clock.
///
/// ModelKernelMigrator: the real MovePagesMigrator engine running on a FakePageSystem. Every
/// operation is appended to an ordered log of strings for golden tests.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tierd/migrate/MovePagesMigrator.h"

namespace tierd::migrate {

/// How a fake VMA is backed.
enum class FakeBacking {
  Base,     ///< base pages (kernel page size = base page size)
  Thp,      ///< PMD THPs: pages are thpSize, smaps AnonHugePages == Rss, until splitThp()
  Hugetlb,  ///< hugetlb pages of the VMA's page size (VmFlags ht, numa_maps "huge")
};

/// A modelled kernel (see the file comment). Not thread-safe.
class FakePageSystem final : public PageSystem {
 public:
  /// `basePageSize` and `thpSize` in bytes.
  explicit FakePageSystem(uint64_t basePageSize = 4096, uint64_t thpSize = 2ull << 20);

  // ---- set-up ----
  /// Maps [start, start+length) for `pid` with `backing`; `hugePageSize` only for Hugetlb.
  /// start/length must be multiples of the page size.
  void map(pid_t pid, uint64_t start, uint64_t length, FakeBacking backing,
           uint64_t hugePageSize = 0);
  /// Makes every page of [start, start+length) present on `node` (pages of the VMA's size).
  void populate(pid_t pid, uint64_t start, uint64_t length, NodeId node);
  /// Limits free pages of `pageSize` on `node` (default: unlimited). Moves consume target
  /// capacity and give it back to the source when the source is limited too. A move that finds
  /// no free page fails its call with -ENOMEM (see the file comment).
  void setCapacity(NodeId node, uint64_t pageSize, uint64_t freePages);
  /// Nodes that exist (N_MEMORY); a move to another node fails the call with -ENODEV (after the
  /// node groups before it have moved).
  /// Default: any node exists.
  void setNodes(std::set<NodeId> nodes);
  /// Every move of the page containing `addr` returns status -err, `times` times (-1: always).
  void scriptPageError(pid_t pid, uint64_t addr, int err, int times = -1);
  /// The `moveCall`-th (0-based) move call (nodes != NULL) handles only its first `processed`
  /// pages, returns count - processed and leaves the other status entries unwritten.
  void scriptPartialReturn(uint64_t moveCall, uint64_t processed);
  /// Runs `action` just before the `call`-th (0-based) movePages call of any kind (query or
  /// move): e.g. exitPid or unmap between planning and moving.
  void beforeCall(uint64_t call, std::function<void()> action);
  /// The process exits: calls return -ESRCH, /proc reads fail with ENOENT.
  void exitPid(pid_t pid);
  /// The process holding `pid` exits and is reaped, and the kernel gives the pid to a new
  /// process (pids are reused once pid_max wraps, kernel/pid.c alloc_pid): from then on every
  /// call and /proc read for `pid` answers for the new process, which has no mappings until
  /// map() and populate() give it some (its pages answer move_pages like any other), every node
  /// allowed, no scripted page errors. Logged "reuse pid=P". The new process's start time
  /// (/proc/PID/stat field 22) is the SysRoot's to change; this model holds memory only.
  void reusePid(pid_t pid);
  /// The process exits but is not reaped (a zombie): it has no mm, so calls return -EINVAL
  /// (mm/migrate.c find_mm_struct) and /proc/PID/{maps,smaps,numa_maps} read empty.
  void zombiePid(pid_t pid);
  /// The nodes `pid`'s cpuset lets it use (/proc/PID/status Mems_allowed_list; default: every
  /// node). A move call with a target outside them fails with -EACCES (see movePages).
  void setMemsAllowed(pid_t pid, std::set<NodeId> nodes) {
    procs_[pid].memsAllowed = std::move(nodes);
  }
  /// The kernel splits the THP containing `addr` of a Thp VMA (split_huge_page: memory pressure,
  /// a partial munmap, or a migration that found no free PMD-order block on its target): the
  /// 2 MiB chunk becomes base pages on the same node, moved one address at a time from then on.
  /// smaps AnonHugePages drops by one THP, Rss stays. No-op without a THP there.
  void splitThp(pid_t pid, uint64_t addr);
  /// The page containing `addr` is freed inside its mapping (madvise MADV_DONTNEED of one base
  /// page, as an allocator returns memory): not present from then on, the VMA unchanged. A THP
  /// there is split first (the kernel splits a PMD mapping that loses part of it).
  void dropPage(pid_t pid, uint64_t addr);
  /// Unmaps [start, start+length) of `pid` (splits VMAs; drops their pages).
  void unmap(pid_t pid, uint64_t start, uint64_t length);

  // ---- inspection ----
  /// Node of the page containing `addr`, nullopt when not present or unmapped.
  std::optional<NodeId> nodeOf(pid_t pid, uint64_t addr) const;
  /// Reads of /proc/PID/maps, smaps and numa_maps answered so far (any pid, failed ones too):
  /// what tests count to pin how often a tick walks a process's page tables.
  uint64_t mapsReads() const { return mapsReads_; }
  uint64_t smapsReads() const { return smapsReads_; }
  uint64_t numaMapsReads() const { return numaMapsReads_; }
  /// Ordered operation log (calls with results, exits, unmaps, sleeps).
  const std::vector<std::string>& log() const { return log_; }
  void clearLog() { log_.clear(); }
  /// Simulated costs: ns per call, per address, per byte moved.
  int64_t nsPerCall = 2000;
  int64_t nsPerAddress = 30;
  int64_t nsPerByteMoved = 1;

  // ---- PageSystem ----
  long movePages(pid_t pid, uint64_t count, void** pages, const int* nodes, int* status,
                 int flags) override;
  Result<std::vector<sys::SmapsVma>> maps(pid_t pid) override;
  Result<std::vector<sys::SmapsVma>> smaps(pid_t pid) override;
  Result<std::vector<sys::NumaMapsVma>> numaMaps(pid_t pid) override;
  Result<std::vector<uint64_t>> pagemap(pid_t pid, uint64_t start, uint64_t pages) override;
  /// The set given to setMemsAllowed(), else node ids 0-63 (setNodes() does not narrow it, so
  /// a move to a missing node still reaches the kernel's -ENODEV). Errors: ENOENT once the
  /// process exited.
  Result<std::set<NodeId>> memsAllowed(pid_t pid) override;
  /// Makes the page at `addr` read as the zero page: present in pagemap, -EFAULT to move_pages,
  /// not counted in smaps Rss or numa_maps (like the kernel's shared zero page).
  void mapZeroPage(pid_t pid, uint64_t addr);
  /// What pagemap entries and memoryBlockNodes() show of page frames. None (the default): no
  /// block map (memoryBlockNodes() answers Environment) and entries with the present bit only.
  /// Hidden: a block map, but entries without PFN (a reader without CAP_SYS_ADMIN). Shown: a
  /// present page on node N has PFN (N + 1) x kPfnsPerBlock + (its base page number mod
  /// kPfnsPerBlock) and PM_MMAP_EXCLUSIVE unless sharePage() was called for it; the zero page
  /// has PFN 1 (block 0, which no node lists) and is never exclusive. The block map lists block
  /// N + 1 under node N for every node of setNodes() (default: 0 and 1), and under two nodes the
  /// block of setAmbiguousBlock()'s node (left out as ambiguous).
  enum class Pfns { None, Hidden, Shown };
  void setPfns(Pfns mode) { pfns_ = mode; }
  static constexpr uint64_t kPfnsPerBlock = 1ull << 20;
  /// The page at `addr` is mapped by another process too (a forked child's copy-on-write page):
  /// its pagemap entry is not PM_MMAP_EXCLUSIVE.
  void sharePage(pid_t pid, uint64_t addr) { procs_[pid].sharedPages.insert(addr / base_ * base_); }
  /// memoryBlockNodes() lists `node`'s block under two nodes (a block that spans a boundary).
  void setAmbiguousBlock(NodeId node) { ambiguousBlock_ = node; }
  /// Calls of memoryBlockNodes() so far.
  uint64_t blockMapReads() const { return blockMapReads_; }
  Result<sys::MemoryBlockNodes> memoryBlockNodes() override;
  uint64_t basePageSize() override { return base_; }
  uint64_t thpSize() override { return thp_; }
  int64_t nowNs() override { return now_; }
  /// Jumps the clock to `ns`. With a stop flag the sleep is modelled like LinuxPageSystem's: in
  /// slices of kStopPollNs, each followed by duringSleep() and a look at the flag; a stop ends
  /// it early (logged "sleep Nns of Mns: stopped", returns false).
  bool sleepUntilNs(int64_t ns, const std::atomic<bool>* stop) override;
  /// Called with the clock after each slice of a sleep with a stop flag (tests raise the flag
  /// at a chosen simulated time, as the signal thread would).
  std::function<void(int64_t nowNs)> duringSleep;
  int64_t threadKernelCpuNs() override { return cpu_; }

 private:
  struct Vma {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t pageSize = 0;
    FakeBacking backing = FakeBacking::Base;
  };
  struct Proc {
    bool exited = false;
    bool zombie = false;
    std::map<uint64_t, Vma> vmas;                 // by start
    std::map<uint64_t, NodeId> pages;             // page start -> node
    std::set<uint64_t> zeroPages;                 // base page addresses mapping the zero page
    std::set<uint64_t> sharedPages;               // base pages not PM_MMAP_EXCLUSIVE
    std::optional<std::set<NodeId>> memsAllowed;  // cpuset.mems of the task; nullopt = all
    std::set<uint64_t> split;                     // chunks of Thp VMAs now in base pages
  };
  struct ScriptedError {
    int err = 0;
    int times = -1;
  };
  const Vma* findVma(const Proc& p, uint64_t addr) const;
  // Size of the page at `addr` in `v`: base pages in split chunks of a Thp VMA.
  uint64_t pageSizeAt(const Proc& p, const Vma& v, uint64_t addr) const;
  // Start of the page containing `addr` in `v`.
  uint64_t pageStart(const Proc& p, const Vma& v, uint64_t addr) const {
    const uint64_t size = pageSizeAt(p, v, addr);
    return addr / size * size;
  }
  Result<std::vector<sys::SmapsVma>> render(pid_t pid, bool counters);
  /// The pages of one do_pages_move node group: queued for `node`, migrated together.
  struct MoveGroup {
    /// One queued page: its index in the call's arrays, its entry in Proc::pages, its size.
    struct Queued {
      uint64_t index = 0;
      std::map<uint64_t, NodeId>::iterator page;
      uint64_t pageSize = 0;
    };
    std::vector<Queued> pages;
    NodeId node = -1;  ///< the group's target node; -1 before the first entry
  };
  /// mm/migrate.c do_pages_stat_array: status[i] = the node of pages[i], else -EFAULT (no VMA,
  /// or the zero page) or -ENOENT (not present).
  void statPages(const Proc& p, uint64_t count, void** pages, int* status) const;
  /// mm/migrate.c do_pages_move (see movePages in the .cpp): moves pages[i] to nodes[i] in node
  /// groups, storing status[]; returns the call's result (0, the entries not attempted, or
  /// -errno) and adds the copy cost to `cost`, ns.
  long doPagesMove(pid_t pid, Proc& p, uint64_t count, void** pages, const int* nodes, int* status,
                   int64_t& cost);
  /// add_folio_for_migration for the page at `addr`: > 0 queued (`q.page`, `q.pageSize` set),
  /// 0 already on `node`, < 0 the page's error (-EFAULT, -ENOENT, -EBUSY for a huge page already
  /// in `handled` this call, or a scripted one).
  int addFolio(pid_t pid, Proc& p, uint64_t addr, NodeId node, std::set<uint64_t>& handled,
               MoveGroup::Queued& q);
  /// Migrates `group`'s pages to its node and stores their status (migrate_pages then
  /// store_status); empties it. 0, or -ENOMEM at the first page the node has no room for (the
  /// pages before it stay moved, no status is stored). Adds the copy cost to `cost`, ns.
  long migrateGroup(MoveGroup& group, int* status, int64_t& cost);

  uint64_t base_;
  uint64_t thp_;
  std::map<pid_t, Proc> procs_;
  std::map<std::pair<NodeId, uint64_t>, uint64_t> capacity_;
  std::optional<std::set<NodeId>> nodes_;
  Pfns pfns_ = Pfns::None;
  std::optional<NodeId> ambiguousBlock_;
  uint64_t blockMapReads_ = 0;
  std::map<std::pair<pid_t, uint64_t>, ScriptedError> errors_;
  std::map<uint64_t, uint64_t> partial_;
  std::map<uint64_t, std::vector<std::function<void()>>> before_;
  uint64_t calls_ = 0;
  uint64_t moveCalls_ = 0;
  uint64_t mapsReads_ = 0;
  uint64_t smapsReads_ = 0;
  uint64_t numaMapsReads_ = 0;
  int64_t now_ = 0;
  int64_t cpu_ = 0;
  std::vector<std::string> log_;
};

/// The MovePagesMigrator engine on a FakePageSystem (see the file comment).
class ModelKernelMigrator final : public Migrator {
 public:
  explicit ModelKernelMigrator(MigratorConfig config = {}, uint64_t basePageSize = 4096,
                               uint64_t thpSize = 2ull << 20);

  /// The modelled kernel, for set-up and inspection.
  FakePageSystem& kernel() { return *kernel_; }
  /// The ordered operation log.
  const std::vector<std::string>& log() const { return kernel_->log(); }

  BatchResult execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                      const std::atomic<bool>* stop = nullptr) override {
    return engine_.execute(batch, deadlineNs, stop);
  }
  Result<LocateResult> locate(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return engine_.locate(pid, ranges);
  }
  Result<LocateResult> locatePages(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return engine_.locatePages(pid, ranges);
  }
  int64_t nowNs() override { return engine_.nowNs(); }
  void setProcessCheck(ProcessCheck check) override { engine_.setProcessCheck(std::move(check)); }
  void setLimits(const MigrationLimits& limits) override { engine_.setLimits(limits); }
  void setMinBytesPerCall(uint64_t bytes) override { engine_.setMinBytesPerCall(bytes); }
  /// The /proc reads the engine plans and locates on (ProcReads), never null: hand it to the
  /// reader (daemon::Engine's LocationCache, a test) that sets them.
  const std::shared_ptr<ProcReads>& reads() const { return reads_; }
  /// The engine (for bytesPerCall() and config()).
  MovePagesMigrator& engine() { return engine_; }

 private:
  ModelKernelMigrator(MigratorConfig config, std::unique_ptr<FakePageSystem> kernel);
  std::shared_ptr<ProcReads> reads_ = std::make_shared<ProcReads>();
  FakePageSystem* kernel_;
  MovePagesMigrator engine_;
};

}  // namespace tierd::migrate

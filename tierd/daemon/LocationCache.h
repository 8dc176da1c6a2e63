#pragma once
/// \file
/// LocationCache: each tracked process's mappings, page locations and resident memory per node,
/// read in full (/proc/PID/smaps, Migrator::locate, /proc/PID/numa_maps) and then reused on later
/// ticks while the process's /proc/PID/maps shows the same VMAs and tierd's own moves left its
/// pages where the kernel said (Engine::tick, "locate phase"); ranges a move left uncertain are
/// queried again alone (Migrator::locatePages). It gives the heat model (policy::HeatModel) each
/// process's managed mappings and the node of each region, hands its reads to the migrator for
/// the tick (migrate::ProcReads), and counts THP
/// chunks that came back split after a move. Owned and called by one thread (the engine's).
/// Depends on tierd_migrate (the Migrator seam), tierd_policy (HeatModel), tierd_topology
/// (page sizes), tierd_sys (the smaps, maps and numa_maps readers' formats).

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/HeatModel.h"
#include "tierd/core/Migration.h"
#include "tierd/core/Result.h"
#include "tierd/migrate/Migrator.h"
#include "tierd/migrate/ProcReads.h"
#include "tierd/sys/ProcMaps.h"
#include "tierd/sys/Residency.h"
#include "tierd/topology/Topology.h"

namespace tierd::daemon {

/// The mappings tierd manages, from /proc/PID/smaps: private anonymous read-write memory (heap
/// and anonymous mmap) and hugetlb. File-backed, shared and special mappings are left to the
/// kernel. Page size: KernelPageSize for hugetlb, `pmdSize` where THP may back the mapping
/// (THPeligible or AnonHugePages > 0), else KernelPageSize (or `basePage` when absent).
std::vector<policy::Mapping> managedMappings(const std::vector<sys::SmapsVma>& vmas,
                                             uint64_t basePage, uint64_t pmdSize);

/// The node of each region of one process, from its located runs (Migrator::locate): per 2 MiB
/// region (per huge page for a hugetlb mapping of 1 GiB pages), the node holding most of the
/// region's present bytes, the lowest node id on a tie; regions with no present byte are left
/// out. A run's region size is that of the mapping holding the run's start. `mappings`:
/// disjoint (managedMappings of one smaps read), in any order; `runs` in any order, those with a
/// negative status (not present, no VMA) ignored. Returns (region start, node) ascending by
/// start. O(runs x log mappings): `probes`, when not null, is increased by the number of mapping
/// comparisons made (what the unit tests count instead of time; `tierctl bench tick` measures
/// the whole tick's CPU and does not count these).
std::vector<std::pair<uint64_t, NodeId>> regionNodes(const std::vector<policy::Mapping>& mappings,
                                                     const std::vector<LocatedRun>& runs,
                                                     uint64_t* probes = nullptr);

/// Reads a process's mappings with their counters (/proc/PID/smaps), or its VMAs alone
/// (/proc/PID/maps: the cheap read that tells whether its mappings changed).
using MappingsReader = std::function<Result<std::vector<sys::SmapsVma>>(pid_t pid)>;

/// Reads a process's /proc/PID/numa_maps (resident memory per node, and locate()'s whole-VMA
/// answers).
using NumaMapsReader = std::function<Result<std::vector<sys::NumaMapsVma>>(pid_t pid)>;

/// What one tick's locate phase did, summed over its processes.
struct LocateTally {
  size_t reused = 0;     ///< processes whose last full read was reused (no smaps, no locate)
  size_t relocated = 0;  ///< uncertain ranges queried again alone (Migrator::locatePages)
  uint64_t errors = 0;   ///< smaps or locate() failures of processes still alive
  /// THP chunks moved since the last full read found split by this tick's full reads
  /// (TickReport::thpSplitAfterMove; EngineTotals::thpSplitAfterMove sums it).
  uint64_t thpSplitAfterMove = 0;
};

/// The per-process read cache of the locate phase.
class LocationCache {
 public:
  /// Most bytes of ranges queued per process for a query of their own: 64 MiB, 16 K base pages,
  /// ~80 ms of status queries under the rig's TCG (~5 us an address) against 1.3-2.3 s for a full
  /// read of a 700 MiB redis there. Beyond it, a full read.
  static constexpr uint64_t kRelocateMaxBytes = 64ull << 20;

  /// `migrator` locates; `reads` is given this tick's smaps and numa_maps reads (the object the
  /// migrator plans on); `heat` is given mappings and locations and asked a region's node; all
  /// three outlive the cache. `mappings` reads smaps, `numaMaps` numa_maps, `layout` maps (none
  /// may be empty).
  LocationCache(migrate::Migrator& migrator, migrate::ProcReads& reads, policy::HeatModel& heat,
                MappingsReader mappings, NumaMapsReader numaMaps, MappingsReader layout);

  /// The numa_maps reader the cache was given (for readers of numa_maps outside the locate
  /// phase: a restore's memory policies).
  const NumaMapsReader& numaMapsReader() const { return numaMaps_; }

  /// Forgets the reads handed to the migrator (ProcReads::clear): at the start of a tick's
  /// locate phase and at its end, so no smaps or numa_maps read outlives its tick.
  void clearReads();

  /// The locate phase for process `pid` at `nowNs` (monotonic ns): reuses its last full read when
  /// `fullLocateIntervalNs` (daemon.full_locate_interval; 0: never reuse) has not passed since,
  /// its maps show the same VMAs and its queued uncertain ranges could be queried; else reads
  /// smaps, numa_maps and locate() in full (page sizes from `topo`'s caps) and counts THP chunks
  /// split since their move. `exited(pid)`: the process exited since the tick's scope pass (its
  /// unreadable files are then no problem). Failures of a live process are counted in
  /// `tally.errors` and appended to `problems` ("pid P: ..." or "locate pid P: ...").
  void refresh(pid_t pid, uint64_t nowNs, uint64_t fullLocateIntervalNs,
               const topology::Topology& topo, const std::function<bool(pid_t)>& exited,
               LocateTally& tally, std::vector<std::string>& problems);

  /// Resident memory per node summed over `pids` (ascending), `basePage` bytes for VMAs without
  /// kernelpagesize_kB: each process's numa_maps is read once per full read (by refresh() when it
  /// located pages, else here); between full reads its last read is kept, shifted by tierd's
  /// moves. Unreadable ones (exited since the scope matched them) are skipped.
  std::map<NodeId, sys::NodeMemory> memoryOf(const std::vector<pid_t>& pids, uint64_t basePage);

  /// After a move of `r` (before its outcome reaches the heat model): keeps the process's full
  /// read when every page of the range is on the target by the kernel's answer (Moved or
  /// AlreadyThere) or not present, or when no page of it was reached (NotAttempted); queues the
  /// range for a query of its own when the kernel left some of its pages elsewhere (up to
  /// kRelocateMaxBytes, not for hugetlb); otherwise the next tick reads the process in full. The
  /// moved bytes are shifted in its resident memory from the region's node to the target. A pid
  /// the cache does not know is ignored.
  void keep(const RangeResult& r);
  /// Remembers the THP chunks (`pmd` bytes, aligned) of an executed move `m` that reported Moved,
  /// to check at the next full read whether they came back split.
  void rememberMovedThp(const MoveRange& m, uint64_t pmd);

  /// The next refresh() of `pid` reads in full (the heat model forgot its mappings and
  /// locations: its workload's cgroup was re-created).
  void invalidate(pid_t pid);
  /// Drops everything known of `pid` (it left its scope).
  void forget(pid_t pid);

 private:
  struct Entry {
    std::vector<policy::Mapping> mappings;  ///< managedMappings of the last full read
    /// THP chunks moved since the last full read: chunk start -> (target, AnonHugePages of its
    /// VMA at that read).
    struct MovedThp {
      NodeId target = -1;
      uint64_t vmaStart = 0;
      uint64_t anonHugeBefore = 0;
    };
    std::map<uint64_t, MovedThp> movedThp;
    /// The smaps the last full read took (its Rss and AnonHugePages as they were then): the
    /// layout a reuse checks maps against (sameLayout), shared with the migrator on the ticks
    /// that reuse the read (ProcReads::setLayout).
    std::shared_ptr<const std::vector<sys::SmapsVma>> smaps;
    /// AnonHugePages of the VMA of `smaps` that starts at `vmaStart`, bytes; 0 without one.
    uint64_t anonHugeAt(uint64_t vmaStart) const;
    std::optional<uint64_t> fullReadAtNs;  ///< tick time of that read; nullopt: read next tick
    /// Ranges a move left uncertain since, queried again alone at the next reuse.
    std::vector<AddressRange> relocate;
    bool readThisTick = false;        ///< a full read happened in this tick
    bool memoryReadThisTick = false;  ///< ... and `memory` was read with its locations
    /// Resident memory per node from this process's numa_maps at its last full read.
    std::optional<std::map<NodeId, sys::NodeMemory>> memory;
  };

  /// True when `maps` (/proc/PID/maps) lists the VMAs of `read` (an smaps read) with the same
  /// start, end, offset, inode, perms and path: the same mappings, whatever their counters.
  static bool sameLayout(const std::vector<sys::SmapsVma>& maps,
                         const std::vector<sys::SmapsVma>& read);
  /// True when `e`'s mappings and locations may be reused at `nowNs`.
  bool reusable(pid_t pid, const Entry& e, uint64_t nowNs, uint64_t fullLocateIntervalNs);
  /// Queries the ranges in `e.relocate` and gives their nodes to the heat model; true when done
  /// (or none queued), false when the query failed (the caller then reads in full).
  bool relocate(pid_t pid, Entry& e, LocateTally& tally);
  /// The full read: smaps, numa_maps, locate, THP split check. True when every step succeeded.
  bool readInFull(pid_t pid, Entry& e, const topology::Topology& topo,
                  const std::function<bool(pid_t)>& exited, LocateTally& tally,
                  std::vector<std::string>& problems);
  /// Counts the chunks of Entry::movedThp that came back split, clears it.
  static void countSplitThps(Entry& e, const std::vector<LocatedRun>& runs, uint64_t pmd,
                             LocateTally& tally);

  migrate::Migrator& migrator_;
  migrate::ProcReads& reads_;
  policy::HeatModel& heat_;
  MappingsReader mappings_;
  NumaMapsReader numaMaps_;
  MappingsReader layout_;
  std::map<pid_t, Entry> entries_;
};

}  // namespace tierd::daemon

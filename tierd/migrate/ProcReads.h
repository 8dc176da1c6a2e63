#pragma once
/// \file
/// ProcReads: the /proc files of tracked processes that a tick has already read, handed from
/// the reader (daemon::LocationCache, the migration bench) to the migrator that plans on them
/// (MovePagesMigrator), so that one tick walks a process's page tables once. Each of smaps and
/// numa_maps walks every page table of the process (~0.2-0.5 s for a 700 MiB redis under TCG).
/// One object is given to both at construction; the reader sets, the migrator only reads. Not
/// thread-safe: used by the one thread that runs the tick (or the bench).

#include <sys/types.h>

#include <map>
#include <memory>
#include <vector>

#include "tierd/sys/ProcMaps.h"

namespace tierd::migrate {

/// See the file comment.
class ProcReads {
 public:
  /// /proc/PID/smaps of one process, as the reader read it (shared, never copied).
  using SmapsSnapshot = std::shared_ptr<const std::vector<sys::SmapsVma>>;
  /// /proc/PID/numa_maps of one process, as the reader read it (shared, never copied).
  using NumaMapsSnapshot = std::shared_ptr<const std::vector<sys::NumaMapsVma>>;

  /// The smaps of `pid` read this tick (the engine reads it to find the managed mappings): the
  /// migrator's next locate() and execute() plan against it instead of reading smaps again. A
  /// newer one for the same pid replaces it; `smaps` must not be null. What changed in the
  /// process since the read is found as when the migrator reads smaps itself: a page whose VMA
  /// is gone answers -EFAULT (Gone after a /proc/PID/maps check).
  void setSmaps(pid_t pid, SmapsSnapshot smaps) { smaps_[pid] = std::move(smaps); }

  /// An older smaps of `pid` (the engine's last full read) whose VMAs the reader has just found
  /// unchanged in /proc/PID/maps (start, end, offset, inode, perms and path), with Rss and
  /// AnonHugePages as they were then. The migrator's next execute() plans on it, without reading
  /// smaps, the ranges whose VMAs all are hugetlb (one address per huge page: fixed per VMA) or
  /// had no THP then (one address per base page, right whatever came since: a THP collapsed
  /// since moves whole at its first address, its other addresses answer -EBUSY and are
  /// retried). Their resident pages are never taken from the old Rss: a VMA that had fewer than
  /// half its pages then is sent the pages /proc/PID/pagemap shows mapped now. Ranges that touch
  /// a VMA that had THP then are planned on a fresh read (the partly-huge plan needs the current
  /// AnonHugePages). A smaps set by setSmaps() for the same pid comes first; `smaps` must not be
  /// null.
  void setLayout(pid_t pid, SmapsSnapshot smaps) { layouts_[pid] = std::move(smaps); }

  /// The numa_maps of `pid` read this tick (the engine reads it for the workload's resident
  /// memory per node): the migrator's next locate() answers whole VMAs from it instead of
  /// reading the file again. The reader reads it just before locate(), where locate() would
  /// read it itself, so the answers are those of a fresh read. A newer one for the same pid
  /// replaces it; `numaMaps` must not be null.
  void setNumaMaps(pid_t pid, NumaMapsSnapshot numaMaps) { numaMaps_[pid] = std::move(numaMaps); }

  /// Forgets every read (the engine calls it at the start and end of each tick, so that no read
  /// outlives its tick, and sets its last full read again on a tick that reuses it).
  void clear() {
    smaps_.clear();
    layouts_.clear();
    numaMaps_.clear();
  }

  /// What setSmaps() kept for `pid`; null when nothing.
  SmapsSnapshot smaps(pid_t pid) const { return find(smaps_, pid); }
  /// What setLayout() kept for `pid`; null when nothing.
  SmapsSnapshot layout(pid_t pid) const { return find(layouts_, pid); }
  /// What setNumaMaps() kept for `pid`; null when nothing.
  NumaMapsSnapshot numaMaps(pid_t pid) const { return find(numaMaps_, pid); }

 private:
  template <typename Snapshot>
  static Snapshot find(const std::map<pid_t, Snapshot>& m, pid_t pid) {
    auto it = m.find(pid);
    return it == m.end() ? Snapshot{} : it->second;
  }

  std::map<pid_t, SmapsSnapshot> smaps_;
  std::map<pid_t, SmapsSnapshot> layouts_;
  std::map<pid_t, NumaMapsSnapshot> numaMaps_;
};

}  // namespace tierd::migrate

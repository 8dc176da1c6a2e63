#pragma once
/// \file
/// DamonPool: the kdamonds tierd owns, one per sampled process (behind HotnessSource).
///
/// DAMON sysfs (Documentation/admin-guide/mm/damon/usage.rst) creates kdamond directories only by
/// writing `kdamonds/nr_kdamonds`, which removes and recreates every one of them and fails while
/// any runs. So tierd creates all of its slots at once, when nr_kdamonds reads 0 (nobody else's
/// kdamond exists): `capacity` kdamonds, each started and stopped on its own for one process.
/// A kdamond that is off has no kernel thread; the idle slots cost only their sysfs directories.
/// When the last slot is released the pool writes nr_kdamonds 0 again.
///
/// Surviving a crash: DAMON sysfs has no owner marker, and a tierd killed by SIGKILL leaves its
/// kdamonds running, so nr_kdamonds stays non-zero and no later tierd could ever create its own.
/// The pool therefore records its ownership in `ownerFile` (production /run/tierd/damon.owner,
/// a tmpfs that a reboot empties) before it writes nr_kdamonds: a first line
///   `tierd_pid=P tierd_start=T boot_id=B nr_kdamonds=N`
/// (T: /proc/P/stat field 22; B: /proc/sys/kernel/random/boot_id), then one line per kdamond a
/// source configured
///   `kdamond=I pid=K operations=O target=PID`
/// (K: kdamonds/I/pid while it runs for us, -1 before its start and after its stop; O and PID:
/// contexts/0/operations and contexts/0/targets/0/pid_target as written). The file is rewritten
/// (a new file renamed over it) before a source configures a kdamond, once it runs, and when it
/// stops. reclaimOrphans() at start turns those kdamonds off and removes them when the record's
/// tierd is gone (no process with that pid and start time), the boot is the same, nr_kdamonds
/// still reads N and every kdamond is what the record says: a running one has its recorded pid
/// (and operations and target); one that is off is either as nr_kdamonds made it (no context;
/// not for one recorded running, which only a new nr_kdamonds write empties) or configured with
/// its recorded operations and target. Anything else (another tierd alive, a count that changed,
/// an administrator's kdamond where ours were) leaves DAMON untouched, removes the record and
/// says why. A record of an older tierd (the first line only) reads as one without kdamond
/// lines: its idle kdamonds are reclaimed, a running or configured one is never ours by it.
/// DamonPool::release() of a slot someone else took over drops its line.
///
/// Kernel modules that start DAMON contexts exclusively (DAMON_STAT, on by default in Debian's
/// 7.3 kernel; DAMON_RECLAIM, DAMON_LRU_SORT) make every sysfs kdamond fail to start with EBUSY
/// (mm/damon/core.c damon_start) although nr_kdamonds reads 0; exclusiveHolder() names them.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "telemetry/hotness/DamonSource.h"

namespace tierd::telemetry {

/// How many kdamonds tierd creates when DAMON is free (one per sampled process), by default.
inline constexpr int kDefaultDamonKdamonds = 16;

/// Settings of the pool. Units in the names.
struct DamonPoolConfig {
  int capacity = kDefaultDamonKdamonds;  ///< kdamonds created (nr_kdamonds 0 -> capacity), 1..64
  /// Where ownership is recorded (absolute host path; its directory is created 0700). "" keeps
  /// no record (tests, tierctl commands that remove their kdamond before they exit).
  std::string ownerFile;
  pid_t selfPid = 0;           ///< this tierd's pid, for the record
  uint64_t selfStartTime = 0;  ///< this tierd's /proc/self/stat field 22
};

/// A kernel module holding DAMON exclusively, from /sys/module/NAME/parameters/enabled = Y:
/// "damon_stat", "damon_reclaim", "damon_lru_sort"; "" when none is.
std::string exclusiveHolder(DamonFs& fs);

/// The exact reason DAMON is unavailable while `holder` (exclusiveHolder) runs, and what to do:
/// the boot parameter `holder.enabled=N`, or writing N to its parameter file at run time, or (for
/// damon_stat) `sampling.damon_stat = "disable"` to let tierd turn it off.
std::string exclusiveHolderWhy(const std::string& holder);

/// One kdamond line of the ownership record (see the file comment).
struct DamonSlotRecord {
  pid_t kdamondPid = -1;   ///< kdamonds/I/pid while it runs for us, -1 when not running
  std::string operations;  ///< contexts/0/operations written ("vaddr")
  pid_t target = 0;        ///< contexts/0/targets/0/pid_target written
};

/// The ownership record (see the file comment).
struct DamonOwnerRecord {
  pid_t pid = 0;           ///< the owning tierd (or tierctl)
  uint64_t startTime = 0;  ///< its /proc/PID/stat field 22
  std::string bootId;      ///< the boot it ran in
  int nrKdamonds = 0;      ///< kdamonds it created
  /// The kdamonds a source configured, by index; none in a record of an older tierd.
  std::map<int, DamonSlotRecord> slots;
};

/// Parses an ownership record: its first line, then any kdamond lines (see the file comment).
/// Errors: Input naming `context`.
Result<DamonOwnerRecord> parseDamonOwnerRecord(const std::string& text, const std::string& context);

/// The record's text for `rec` (what parseDamonOwnerRecord reads), ending in a newline.
std::string formatDamonOwnerRecord(const DamonOwnerRecord& rec);

/// See the file comment. Not thread-safe: one pool per daemon, used from the tick thread.
class DamonPool {
 public:
  /// `fs` must outlive the pool.
  DamonPool(DamonFs& fs, DamonPoolConfig config);
  /// Releases every slot still held (kdamonds off, nr_kdamonds 0, record removed).
  ~DamonPool();
  DamonPool(const DamonPool&) = delete;
  DamonPool& operator=(const DamonPool&) = delete;

  /// Removes the kdamonds a dead tierd left behind (see the file comment). Returns how many
  /// kdamonds were turned off and removed (0 when there was no record). Errors: Environment when
  /// the record names a live tierd (DAMON and the record left alone), when nr_kdamonds or a
  /// kdamond is not what the record says (DAMON left alone, the record removed; a record of
  /// another boot is removed without an error), or a write failed.
  Result<int> reclaimOrphans();

  /// A free kdamond slot, creating the pool's kdamonds on first use. Errors: Unsupported without
  /// DAMON sysfs; Environment when a kernel module holds DAMON exclusively, when kdamonds not
  /// ours exist ("DAMON busy: ..."), when all `capacity` slots are in use, or when the record
  /// cannot be written.
  Result<int> acquire();

  /// Turns slot `slot` off (when the pool still owns DAMON and `mayTouch`) and frees it; the last
  /// release removes the pool's kdamonds and the record. `mayTouch` false (the caller saw its
  /// kdamond taken over) frees the slot without writing anything.
  void release(int slot, bool mayTouch = true);

  /// OK while nr_kdamonds still reads our capacity; an Environment error naming what changed
  /// behind our back otherwise (then nothing more is written).
  Status checkOwnership();

  /// "/sys/kernel/mm/damon/admin/kdamonds/SLOT".
  static std::string kdamondDir(int slot);
  /// True while the pool's kdamonds exist (between the first acquire and the last release).
  bool created() const { return created_; }
  int capacity() const { return config_.capacity; }
  /// Slots acquired and not released.
  int inUse() const;

  /// Records what slot `slot` (acquired) is configured as, and its kdamond's pid while it runs
  /// (see the file comment), rewriting the ownership record. Ok without an ownerFile. Errors:
  /// the record cannot be written.
  Status noteSlot(int slot, const DamonSlotRecord& what);

 private:
  Status writeRecord();
  void removeRecord();
  /// Err naming what differs when kdamond `slot` is not what `rec` (the dead tierd's) says.
  Status matchesRecord(int slot, const DamonOwnerRecord& rec);

  DamonFs& fs_;
  DamonPoolConfig config_;
  bool created_ = false;
  std::vector<bool> used_;
  std::set<int> lost_;  ///< slots released with mayTouch false: taken over by someone else
  std::map<int, DamonSlotRecord> slots_;  ///< the record's kdamond lines
};

}  // namespace tierd::telemetry

#pragma once
/// \file
/// TrackedProcesses: the processes the engine tracks, each held by its identity since it entered
/// its workload's scope: (pid, start time) with a pidfd on the live system
/// (scope::ProcessHandle), and for a `command` workload the executable it matched with
/// (scope::ExecutableId). Tells which tracked process is gone (left its scope, its pid reused by
/// another process, an exec into another executable) and whether a pid still names its process
/// before a move. Owned and called by one thread (the engine's). Depends on tierd_scope.

#include <sys/types.h>

#include <map>
#include <optional>
#include <vector>

#include "policy/TickContext.h"
#include "tierd/daemon/ScopeTracker.h"
#include "tierd/scope/ProcessIdentity.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::daemon {

/// Why a tracked process is no longer the one that was admitted.
enum class GoneReason {
  Left,       ///< exited or no longer selected (or now selected by another workload)
  PidReused,  ///< its pid now names another process (start time changed)
  Execd,      ///< still matched, but after an exec into another executable
};

/// A tracked process found gone (TrackedProcesses::gone).
struct GoneProcess {
  pid_t pid = 0;
  policy::WorkloadId workload = 0;  ///< the workload it was tracked for
  GoneReason why = GoneReason::Left;
};

/// The tracked processes by pid.
class TrackedProcesses {
 public:
  /// Identities are read under `root` (/proc/PID/stat, pidfd_open, /proc/PID/exe).
  explicit TrackedProcesses(sys::SysRoot root);

  /// Starts tracking `pid` for `s.workload` when it still is the process the scope matched (same
  /// start time and, for a `command` workload, the same executable); false, tracking nothing,
  /// when it exited, was replaced or exec'd another executable since.
  bool admit(pid_t pid, const Scoped& s);
  /// The tracked processes not in `scoped` under their workload, whose pid now names another
  /// process (in scope with another start time, or out of scope while alive with another one: a
  /// `pids` selector stays with the first process it saw), or that exec'd another executable
  /// than the one their `command` workload matched. Ascending by pid; nothing is dropped.
  std::vector<GoneProcess> gone(const std::map<pid_t, Scoped>& scoped) const;
  /// Stops tracking `pid` (no-op when not tracked).
  void erase(pid_t pid);

  /// True when `pid` is tracked.
  bool tracks(pid_t pid) const { return procs_.count(pid) != 0; }
  /// The workload tracked `pid` belongs to; nullopt when not tracked.
  std::optional<policy::WorkloadId> workloadOf(pid_t pid) const;
  /// Every tracked pid, ascending.
  std::vector<pid_t> pids() const;
  /// The tracked pids of workload `w`, ascending.
  std::vector<pid_t> pidsOf(policy::WorkloadId w) const;

  /// True when tracked `pid` still names the process it was admitted as (ProcessHandle::stillSame)
  /// and, for a `command` workload, still runs the executable it matched with; false for a pid
  /// not tracked.
  bool stillSame(pid_t pid) const;
  /// True when tracked `pid` exited (or its number was reused) since it was admitted: its
  /// unreadable /proc files are then no problem to report, only a process gone.
  bool exitedSinceScope(pid_t pid) const;

 private:
  struct Proc {
    policy::WorkloadId workload = 0;
    scope::ProcessHandle handle;  ///< identity held since the process entered its scope
    /// A `command` workload's process: held to the executable it matched with too.
    bool holdExecutable = false;
  };
  sys::SysRoot root_;
  std::map<pid_t, Proc> procs_;
};

}  // namespace tierd::daemon

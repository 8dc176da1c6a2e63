#pragma once
/// \file
/// ScopeProvider: which processes belong to each configured workload (docs/architecture.md).
/// A workload is selected by a cgroup path (cgroup v2, or v1 through its memory/pids hierarchy),
/// a pid list, or a command name. tierd never moves memory of a process outside these scopes.
/// The engine asks a ScopeProvider; SysRootScopeProvider answers from the kernel's files, the
/// simulator from its model (tierd/simulate/Simulator.cpp).
///
/// Kernel files SysRootScopeProvider reads under a SysRoot:
///   /proc/self/mountinfo                 cgroup and cgroup2 mount points (proc(5))
///   <cgroup dir>/cgroup.procs            member pids (v1 and v2)
///   <cgroup dir>/memory.numa_stat        per-node usage ("anon N0=... N1=..." v2, in bytes;
///                                        "anon=P N0=P" v1, in pages)
///   <cgroup dir>/**/cgroup.procs         members of descendant cgroups (a pod or slice selects
///                                        its children: on cgroup v2 only leaves hold processes)
///   /proc/PID/exe                        the executable (a symlink the process cannot set)
///   /proc/PID/comm                       set by execve(2): a command scan checks a process that
///                                        did not match again when it changes
///   /proc/PID/cmdline                    empty for kernel threads (never selected)
///   /proc/PID/status                     `Uid:` real uid, for the optional uid filter
///   /proc/PID/stat                       field 22 start time (process identity, ProcessIdentity.h)
/// The cgroup is identified by its directory inode, so a cgroup removed and created again under
/// the same path is a new workload (its heat history is dropped by the caller).
///
/// Why /proc/PID/exe and not comm or argv[0]: any process can set its comm (prctl PR_SET_NAME)
/// and argv[0] to "redis-server" and so join a workload, take its fast-tier quota and push the
/// real one's memory down. The executable link is set by execve(2) alone. A bare name still
/// matches any executable file of that name (an unprivileged user can copy one): an absolute
/// path plus `uid` is the selector that cannot be spoofed.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/scope/ProcessIdentity.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::scope {

/// Levels of descendant cgroups a cgroup selector walks below the selected cgroup (the walk
/// recurses once per level). A deeper branch is skipped (WorkloadScope::skippedCgroups); the
/// rest of the workload is resolved as usual.
inline constexpr int kMaxCgroupDepth = 64;

/// How one configured workload picks its processes. Exactly one of the three is set.
struct WorkloadSelector {
  std::string name;                   ///< configured workload name (the only label used in metrics)
  std::optional<std::string> cgroup;  ///< cgroup path relative to the hierarchy root, e.g.
                                      ///< "/system.slice/redis.service"
  std::vector<pid_t> pids;            ///< explicit pids (vanished ones are dropped and counted)
  /// An executable: an absolute path matches processes whose /proc/PID/exe is that file (after
  /// resolving symlinks of the path, e.g. /usr/bin/redis-server -> redis-check-rdb); a bare name
  /// matches processes whose executable's file name is that name, or whose executable is the
  /// target of a symlink of that name in the executable's own directory.
  std::optional<std::string> command;
  /// Only processes whose real uid (/proc/PID/status `Uid:` first field) is this one.
  std::optional<uid_t> uid = std::nullopt;
};

/// One cgroup mount from mountinfo.
struct CgroupMount {
  std::string mountPoint;  ///< absolute path, e.g. "/sys/fs/cgroup" or "/sys/fs/cgroup/memory"
  int version = 2;         ///< 1 or 2
  std::vector<std::string> controllers;  ///< v1 super options (memory, pids, name=systemd); v2: {}
};

/// The processes of one workload at one refresh.
struct WorkloadScope {
  std::string name;
  std::vector<pid_t> pids;  ///< ascending, never contains tierd's own pid
  /// Start time (/proc/PID/stat field 22, clock ticks since boot) of each pid in `pids`, read
  /// right after the pid matched: the identity the engine holds it to.
  std::map<pid_t, uint64_t> startTimes;
  std::optional<uint64_t> cgroupInode;  ///< inode of the cgroup directory, when selected by cgroup
  std::string cgroupDir;                ///< resolved directory (under the SysRoot), "" otherwise
  uint64_t vanishedPids =
      0;                     ///< configured pids that no longer exist (or now name another process)
  size_t cgroupsWalked = 0;  ///< cgroups read: the selected one and its descendants
  /// Descendant cgroups kMaxCgroupDepth levels below the selected one whose branch was not walked
  /// (paths under the SysRoot): their processes, and their descendants', are not in scope.
  std::vector<std::string> skippedCgroups;
  /// Command selectors: the executable each pid of `pids` ran when it matched (read before the
  /// match, so an exec after it shows as another executable): the identity the engine holds it to.
  std::map<pid_t, ExecutableId> executables;
  /// What the provider has to say about this resolve (a skipped cgroup branch, a pin it could not
  /// record), one line each, the same words while the cause lasts.
  std::vector<std::string> problems;
  /// Bytes per node of the cgroup (and its descendants) from memory.numa_stat's `anon` and
  /// `file` lines (v1: hierarchical_anon/hierarchical_file when present); both set, or both
  /// empty when the selector is no cgroup or the file is missing or malformed.
  std::map<NodeId, uint64_t> anonBytesPerNode;
  std::map<NodeId, uint64_t> fileBytesPerNode;
};

/// Parses /proc/self/mountinfo lines and returns the cgroup/cgroup2 mounts, in file order.
/// Errors: a line with fewer fields than proc(5) specifies, naming context:line.
Result<std::vector<CgroupMount>> parseCgroupMounts(std::string_view mountinfo,
                                                   const std::string& context);

/// Parses memory.numa_stat's `key` line ("anon", "file", "shmem", ...) into bytes per node.
/// v2 reports bytes ("file N0=4096 N1=0"); v1 reports pages ("file=1 N0=1"), multiplied by
/// `pageSize`, and its "hierarchical_<key>=" line (the cgroup with its descendants, as the
/// selector counts them) wins over "<key>=". Errors: Input naming context:line, or no such line.
Result<std::map<NodeId, uint64_t>> parseNumaStatLine(std::string_view text, const std::string& key,
                                                     int cgroupVersion, uint64_t pageSize,
                                                     const std::string& context);

/// Parses memory.numa_stat's `anon` line into bytes per node (parseNumaStatLine "anon"). v2 reports
/// bytes
/// ("anon N0=4096 N1=0"); v1 reports pages ("anon=1 N0=1"), multiplied by `pageSize`.
Result<std::map<NodeId, uint64_t>> parseNumaStatAnon(std::string_view text, int cgroupVersion,
                                                     uint64_t pageSize, const std::string& context);

/// Resolves workload selectors to the processes in scope now (the engine's seam). One scope pass
/// per tick: refreshMounts() (only when a workload has a cgroup selector), beginPass(), then
/// resolve() of each configured workload. Called by one thread (the engine's); may block on file
/// reads; not thread-safe.
class ScopeProvider {
 public:
  virtual ~ScopeProvider() = default;

  /// Starts a scope pass: re-reads the cgroup mounts the cgroup selectors resolve against (a
  /// provider without cgroups returns Ok). An error is a problem of the pass, not its end: the
  /// engine reports it and resolves every workload anyway.
  virtual Status refreshMounts() = 0;

  /// Starts a scope pass for the resolve() calls that follow, until the next beginPass(): a
  /// provider may then answer them from one read of what they share (the /proc listing, each
  /// process's comm). Without it every resolve() reads afresh. Default: nothing.
  virtual void beginPass() {}

  /// Resolves one selector. A missing cgroup is an Environment error (ENOENT) naming the paths
  /// tried; a workload with no live process is not an error (empty pids); a cgroup branch deeper
  /// than kMaxCgroupDepth is skipped (skippedCgroups, problems). A pid-list entry is pinned to
  /// the process that held the pid when it was first resolved: once that process is gone, a new
  /// process with the same number is counted in vanishedPids and never selected.
  virtual Result<WorkloadScope> resolve(const WorkloadSelector& selector) = 0;
};

/// The ScopeProvider of the live system (or a fixture tree): resolves selectors from the files
/// of the file comment, read under a SysRoot. One instance per daemon.
class SysRootScopeProvider final : public ScopeProvider {
 public:
  /// `selfPid` is excluded from every scope (tierd never moves its own memory).
  SysRootScopeProvider(sys::SysRoot root, pid_t selfPid);

  /// Reads the cgroup mounts (/proc/self/mountinfo, once per call). Errors: mountinfo unreadable
  /// or malformed.
  Status refreshMounts() override;

  /// See ScopeProvider::resolve. Reads the files of the file comment for the selector's kind.
  Result<WorkloadScope> resolve(const WorkloadSelector& selector) override;

  /// Keeps the pins of pid-list entries (see resolve) in `file` (an absolute host path;
  /// production /run/tierd/pids.pinned, kept across restarts by the unit's
  /// RuntimeDirectoryPreserve=yes; its folder is created 0700), so that a restarted tierd holds
  /// each entry to the process it pinned before, never to a new holder of the number. Reads the
  /// pins a tierd of this boot and `owner` (the config file's path: another config's pids are
  /// other processes) left there, then rewrites the file (write and rename) whenever a pin is
  /// made or an entry leaves its pid list; a failed write is said in WorkloadScope::problems.
  /// Format: `boot_id=B` (/proc/sys/kernel/random/boot_id under the root: start times count
  /// from boot, so a file of another boot is ignored), `owner=O`, then one line
  /// `WORKLOAD PID START_TIME` per pin. Call before the first resolve(). Errors: the boot id
  /// cannot be read, or `owner` holds a newline (no pins kept); the file cannot be read (other
  /// than missing) or is malformed (Input naming file:line): its pins are not used and the file
  /// is rewritten at the next pin.
  Status keepPins(const std::string& file, const std::string& owner);

  /// See ScopeProvider::beginPass: the command selectors of one pass share one listing of /proc
  /// and one read of each process's comm.
  void beginPass() override { pass_.emplace(); }

  /// The cgroup mounts found by the last refreshMounts().
  const std::vector<CgroupMount>& mounts() const { return mounts_; }

 private:
  Result<std::string> cgroupDir(const std::string& path, int& version) const;
  /// Adds the pids of cgroup `dir` (`depth` levels below the selected one) and its descendants
  /// to `pids`, counting scope.cgroupsWalked and filling scope.skippedCgroups. Errors: the
  /// selected cgroup (depth 0) unreadable or malformed; a descendant's are skipped.
  Status cgroupPids(const std::string& dir, int depth, std::vector<pid_t>& pids,
                    WorkloadScope& scope) const;
  /// The pids of `sel`'s pid list that still name the process pinned for them (the first seen,
  /// or the one keepPins() read), counting the others in scope.vanishedPids; records new pins.
  std::vector<pid_t> pinnedPids(const WorkloadSelector& sel, WorkloadScope& scope);
  /// Writes pinned_ to pinFile_ (see keepPins). Errors: Environment naming the path.
  Status writePins() const;
  /// The pids whose executable matches `command` (exeMatches). A process found not to match is
  /// remembered with its comm (/proc/PID/comm, which execve(2) sets) and skipped by the next
  /// passes while its pid is listed with that comm; every kCommandRescanPasses-th pass checks
  /// every process again. A process that had no executable (/proc/PID/exe unreadable: a kernel
  /// thread, which never execs, or a zombie) is skipped until that rescan without its comm being
  /// read: kworkers rename themselves all the time, and on a many-core server kernel threads are
  /// most of /proc. A process that matched is checked on every pass. So a pass costs one comm
  /// read per user process that did not change, and what could go unseen until the rescan (a pid
  /// reused, or an exec, by a process that kept the old comm; a pid of a kernel thread or zombie
  /// reused) can only delay adopting a process, never select one that does not match.
  /// `executables` gets the executable of each pid returned (WorkloadScope::executables).
  std::vector<pid_t> pidsByCommand(const std::string& command,
                                   std::map<pid_t, ExecutableId>& executables);
  /// Whether the process at `dir` (/proc/PID) runs `command`'s executable (the file comment);
  /// `comm` is its /proc/PID/comm as the caller read it ("" when unreadable), `exe` the target
  /// of its /proc/PID/exe link as read ("" when unreadable: never a match), `id` its executable
  /// as read before the link (live system: compared by device and inode).
  bool exeMatches(const std::string& dir, const std::string& command, const std::string& comm,
                  std::string exe, const ExecutableId& id) const;
  /// Whether the process at `dir` (/proc/PID) goes by `command`: its `comm` (as read, trailing
  /// newline allowed) equals the command's first 15 bytes, or the basename of its argv[0]'s first
  /// word (/proc/PID/cmdline up to the first NUL or space) equals it.
  bool goesBy(const std::string& dir, const std::string& command, std::string comm) const;
  bool uidMatches(pid_t pid, uid_t uid) const;

  sys::SysRoot root_;
  pid_t self_;
  std::vector<CgroupMount> mounts_;
  /// (workload name, pid) -> start time of the process first resolved for a pid-list entry.
  std::map<std::pair<std::string, pid_t>, uint64_t> pinned_;
  std::string pinFile_;   ///< keepPins(): where pinned_ is kept ("" keeps none)
  std::string bootId_;    ///< keepPins(): this boot's id, the file's first line
  std::string pinOwner_;  ///< keepPins(): whose pins (the config file), the file's second line
  /// Passes of pidsByCommand between two checks of every process (10 s at the default 1 s
  /// daemon.interval).
  static constexpr uint64_t kCommandRescanPasses = 10;
  /// A process found not to match a command: its comm then, and whether it had no executable.
  struct NotMatching {
    std::string comm;
    bool noExe = false;
  };
  /// What the command selectors of one pass (beginPass) share: the /proc listing and the comm
  /// of each pid read so far ("" when unreadable).
  struct PassReads {
    std::optional<std::vector<std::string>> procEntries;
    std::map<pid_t, std::string> comms;
  };
  std::optional<PassReads> pass_;
  /// /proc's entries: the pass's listing, else a listing of its own. Errors: /proc unreadable.
  Result<std::vector<std::string>> procEntries();
  /// /proc/PID/comm ("" when unreadable): the pass's read, else a read of its own.
  std::string commOf(pid_t pid);
  /// Per command selector: the processes found not to match, by pid, and the passes.
  struct CommandScan {
    std::map<pid_t, NotMatching> notMatching;
    uint64_t passes = 0;
  };
  std::map<std::string, CommandScan> commandScans_;
};

}  // namespace tierd::scope

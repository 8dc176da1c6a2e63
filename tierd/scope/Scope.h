#pragma once
/// \file
/// ScopeProvider: which processes belong to each configured workload (DESIGN.md "Interfaces").
/// A workload is selected by a cgroup path (cgroup v2, or v1 through its memory/pids hierarchy),
/// a pid list, or a command name. tierd never moves memory of a process outside these scopes.
///
/// Kernel files read under a SysRoot:
///   /proc/self/mountinfo                 cgroup and cgroup2 mount points (proc(5))
///   <cgroup dir>/cgroup.procs            member pids (v1 and v2)
///   <cgroup dir>/memory.numa_stat        per-node usage ("anon N0=... N1=..." v2, in bytes;
///                                        "anon=P N0=P" v1, in pages)
///   /proc/PID/comm, /proc/PID/cmdline    command names (comm is cut at 15 chars by the kernel)
/// The cgroup is identified by its directory inode, so a cgroup removed and created again under
/// the same path is a new workload (its heat history is dropped by the caller).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::scope {

/// How one configured workload picks its processes. Exactly one of the three is set.
struct WorkloadSelector {
  std::string name;                   ///< configured workload name (the only label used in metrics)
  std::optional<std::string> cgroup;  ///< cgroup path relative to the hierarchy root, e.g.
                                      ///< "/system.slice/redis.service"
  std::vector<pid_t> pids;            ///< explicit pids (vanished ones are dropped and counted)
  std::optional<std::string> command;  ///< matches /proc/PID/comm or the basename of argv[0]
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
  std::vector<pid_t> pids;              ///< ascending, never contains tierd's own pid
  std::optional<uint64_t> cgroupInode;  ///< inode of the cgroup directory, when selected by cgroup
  std::string cgroupDir;                ///< resolved directory (under the SysRoot), "" otherwise
  uint64_t vanishedPids = 0;            ///< configured pids that no longer exist
  std::map<NodeId, uint64_t> anonBytesPerNode;  ///< from memory.numa_stat when available
};

/// Parses /proc/self/mountinfo lines and returns the cgroup/cgroup2 mounts, in file order.
/// Errors: a line with fewer fields than proc(5) specifies, naming context:line.
Result<std::vector<CgroupMount>> parseCgroupMounts(std::string_view mountinfo,
                                                   const std::string& context);

/// Parses memory.numa_stat's `anon` line into bytes per node. v2 reports bytes
/// ("anon N0=4096 N1=0"); v1 reports pages ("anon=1 N0=1"), multiplied by `pageSize`.
Result<std::map<NodeId, uint64_t>> parseNumaStatAnon(std::string_view text, int cgroupVersion,
                                                     uint64_t pageSize, const std::string& context);

/// Resolves workload selectors to pids. Not thread-safe; one instance per daemon.
class ScopeProvider {
 public:
  /// `selfPid` is excluded from every scope (tierd never moves its own memory).
  ScopeProvider(sys::SysRoot root, pid_t selfPid);

  /// Reads the cgroup mounts (once per call; cheap). Errors: mountinfo unreadable or malformed.
  Status refreshMounts();

  /// Resolves one selector. A missing cgroup is an Environment error (ENOENT) naming the paths
  /// tried; a workload with no live process is not an error (empty pids).
  Result<WorkloadScope> resolve(const WorkloadSelector& selector) const;

  /// The cgroup mounts found by the last refreshMounts().
  const std::vector<CgroupMount>& mounts() const { return mounts_; }

 private:
  Result<std::string> cgroupDir(const std::string& path, int& version) const;
  std::vector<pid_t> pidsByCommand(const std::string& command) const;
  bool pidAlive(pid_t pid) const;

  sys::SysRoot root_;
  pid_t self_;
  std::vector<CgroupMount> mounts_;
};

}  // namespace tierd::scope

#pragma once
/// \file
/// Process identity: a pid is a number the kernel reuses, so tierd
/// names a process by (pid, start time) and, on the live system, also holds a pidfd.
///
///   /proc/PID/stat   field 22 `starttime`: clock ticks after boot at which the process started
///                    (proc(5)); with the pid it names one process for the life of the boot.
///   pidfd_open(2)    a file descriptor for the process (Linux 5.3); it becomes readable (POLLIN)
///                    once the process has exited, so a live, unreadable pidfd proves that the
///                    pid number still belongs to the process it was opened for.
///
///   /proc/PID/exe    the executable: execve(2) replaces it while pid, start time and pidfd stay,
///                    so a `command` workload also holds its processes to the executable they
///                    matched with (ProcessHandle::sameExecutable).
///
/// The check before each move_pages(2) call (ProcessHandle::stillSame) closes all but a window
/// of one syscall: a process that exits, is reaped and whose pid is handed out again between the
/// check and the call. The kernel has no pidfd-based move_pages to close that window.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::scope {

/// Reads /proc/PID/stat under `root` and returns its start time (clock ticks since boot).
/// Errors: Environment ENOENT/ESRCH when the process is gone, Input when the file is malformed.
Result<uint64_t> readStartTime(const sys::SysRoot& root, pid_t pid);

/// The executable a process runs. On the live system the device and inode of /proc/PID/exe
/// (stat(2) follows the link to the file itself, in whatever mount namespace the process runs,
/// and a binary replaced on disk keeps its old inode); under a fixture root the link's text.
struct ExecutableId {
  uint64_t device = 0;  ///< st_dev of the executable (live system), else 0
  uint64_t inode = 0;   ///< st_ino of the executable (live system), else 0
  std::string link;     ///< the /proc/PID/exe link's text (fixture roots only), else ""
  bool operator==(const ExecutableId& o) const {
    return device == o.device && inode == o.inode && link == o.link;
  }
  bool operator!=(const ExecutableId& o) const { return !(*this == o); }
};

/// Reads the executable `pid` runs now (/proc/PID/exe under `root`, see ExecutableId).
/// Errors: Environment with the errno of stat(2) or readlink(2): ENOENT when the process is gone
/// or has no executable (a kernel thread, a zombie), EACCES without ptrace access to it.
Result<ExecutableId> readExecutable(const sys::SysRoot& root, pid_t pid);

/// One process as tierd knows it: pid, start time, the executable it ran when opened and (live
/// system only) a pidfd. Move-only; closes its pidfd on destruction.
class ProcessHandle {
 public:
  ProcessHandle() = default;
  /// Opens the identity of `pid`: on the live system a pidfd first, then the start time (so the
  /// start time read is the pidfd's process when the pidfd is still unreadable afterwards), then
  /// the executable (none when it cannot be read: see readExecutable).
  /// Errors: the process is gone (Environment ESRCH/ENOENT) or /proc/PID/stat is malformed.
  /// pidfd_open failing with ENOSYS (kernel < 5.3) leaves the handle on start time alone.
  static Result<ProcessHandle> open(const sys::SysRoot& root, pid_t pid);

  ProcessHandle(ProcessHandle&& other) noexcept;
  ProcessHandle& operator=(ProcessHandle&& other) noexcept;
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  ~ProcessHandle();

  pid_t pid() const { return pid_; }
  /// /proc/PID/stat field 22 at open(), clock ticks since boot.
  uint64_t startTime() const { return startTime_; }
  /// True when a pidfd is held (live system, kernel >= 5.3).
  bool hasPidfd() const { return pidfd_ >= 0; }
  /// The executable read at open(); nullopt when it could not be read then.
  const std::optional<ExecutableId>& executable() const { return exe_; }

  /// True when `pid` still names the process this handle was opened for: the pidfd (if held) has
  /// not become readable, and /proc/PID/stat still shows the same start time. False when the
  /// process has exited or the pid now belongs to another process. Reads /proc once.
  bool stillSame(const sys::SysRoot& root) const;

  /// True when the process still runs the executable read at open() (/proc/PID/exe, one stat or
  /// readlink). stillSame() does not see an execve(2): pid, start time and pidfd survive it.
  /// False after an exec of another file, and when the executable cannot be read now or could
  /// not be read at open() (never vouches for what it cannot compare).
  bool sameExecutable(const sys::SysRoot& root) const;

 private:
  pid_t pid_ = 0;
  uint64_t startTime_ = 0;
  std::optional<ExecutableId> exe_;
  int pidfd_ = -1;
};

}  // namespace tierd::scope

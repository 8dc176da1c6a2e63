#include "tierd/scope/ProcessIdentity.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "tierd/sys/Parsers.h"

namespace tierd::scope {

Result<uint64_t> readStartTime(const sys::SysRoot& root, pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto text = root.read(path);
  if (!text) return text.error();
  return sys::parseStatStartTime(text.value(), root.path(path));
}

Result<ProcessHandle> ProcessHandle::open(const sys::SysRoot& root, pid_t pid) {
  ProcessHandle h;
  h.pid_ = pid;
  if (root.isLive()) {
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0)
      h.pidfd_ = static_cast<int>(fd);
    else if (errno == ESRCH)
      return Error::sys(ESRCH, "process " + std::to_string(pid) + " is gone", "pidfd_open");
    // ENOSYS (kernel < 5.3) or EMFILE: go on with the start time alone.
  }
  auto start = readStartTime(root, pid);
  if (!start) return start.error();
  h.startTime_ = start.value();
  if (!h.stillSame(root))
    return Error::sys(ESRCH, "process " + std::to_string(pid) + " exited while opened",
                      "pidfd_open");
  return h;
}

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : pid_(other.pid_), startTime_(other.startTime_), pidfd_(std::exchange(other.pidfd_, -1)) {}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = other.pid_;
    startTime_ = other.startTime_;
    pidfd_ = std::exchange(other.pidfd_, -1);
  }
  return *this;
}

ProcessHandle::~ProcessHandle() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool ProcessHandle::stillSame(const sys::SysRoot& root) const {
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    const int r = ::poll(&p, 1, 0);
    if (r != 0) return false;  // readable: exited (or poll failed: do not trust it)
  }
  auto start = readStartTime(root, pid_);
  return start.ok() && start.value() == startTime_;
}

}  // namespace tierd::scope

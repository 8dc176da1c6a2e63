#include "tierd/scope/ProcessIdentity.h"

#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
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

Result<ExecutableId> readExecutable(const sys::SysRoot& root, pid_t pid) {
  const std::string path = root.path("/proc/" + std::to_string(pid) + "/exe");
  ExecutableId id;
  if (root.isLive()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Error::sys(errno, "cannot stat", path);
    id.device = static_cast<uint64_t>(st.st_dev);
    id.inode = static_cast<uint64_t>(st.st_ino);
    return id;
  }
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return Error::sys(errno, "cannot read the link", path);
  id.link.assign(buf, static_cast<size_t>(n));
  return id;
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
  if (auto exe = readExecutable(root, pid)) h.exe_ = std::move(exe.value());
  if (!h.stillSame(root))
    return Error::sys(ESRCH, "process " + std::to_string(pid) + " exited while opened",
                      "pidfd_open");
  return h;
}

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : pid_(other.pid_),
      startTime_(other.startTime_),
      exe_(std::move(other.exe_)),
      pidfd_(std::exchange(other.pidfd_, -1)) {}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = other.pid_;
    startTime_ = other.startTime_;
    exe_ = std::move(other.exe_);
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

bool ProcessHandle::sameExecutable(const sys::SysRoot& root) const {
  if (!exe_) return false;
  auto now = readExecutable(root, pid_);
  return now.ok() && now.value() == *exe_;
}

}  // namespace tierd::scope

#include "telemetry/hotness/PerfEventOpener.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

namespace tierd::telemetry {

Result<int> LinuxPerfEventOpener::open(const perf_event_attr& attr, pid_t pid, int cpu, int groupFd,
                                       unsigned long flags) {
  perf_event_attr a = attr;
  long fd = ::syscall(SYS_perf_event_open, &a, pid, cpu, groupFd, flags | PERF_FLAG_FD_CLOEXEC);
  if (fd < 0)
    return Error::fromErrno("perf_event_open failed",
                            "pid " + std::to_string(pid) + " cpu " + std::to_string(cpu));
  return static_cast<int>(fd);
}

Result<void*> LinuxPerfEventOpener::map(int fd, size_t length) {
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Error::fromErrno("cannot mmap perf ring of " + std::to_string(length) + " bytes",
                            "perf fd " + std::to_string(fd));
  return p;
}

void LinuxPerfEventOpener::unmap(void* base, size_t length) {
  ::munmap(base, length);
}

Status LinuxPerfEventOpener::enable(int fd, bool on) {
  if (::ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0)
    return Error::fromErrno(on ? "PERF_EVENT_IOC_ENABLE failed" : "PERF_EVENT_IOC_DISABLE failed",
                            "perf fd " + std::to_string(fd));
  return Ok{};
}

Status LinuxPerfEventOpener::setPeriod(int fd, uint64_t period) {
  if (::ioctl(fd, PERF_EVENT_IOC_PERIOD, &period) != 0)
    return Error::fromErrno("PERF_EVENT_IOC_PERIOD failed", "perf fd " + std::to_string(fd));
  return Ok{};
}

void LinuxPerfEventOpener::close(int fd) {
  ::close(fd);
}

}  // namespace tierd::telemetry

#pragma once
/// \file
/// PerfEventOpener: the seam around perf_event_open(2), its mmap ring and ioctls, so PerfSampler
/// runs unchanged against the kernel (LinuxPerfEventOpener) or a test fake that serves byte-exact
/// ring contents (tests/unit/telemetry/FakePerfEventOpener.h).

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// Opens and controls perf events. All fds/maps returned must be given back to close()/unmap().
class PerfEventOpener {
 public:
  virtual ~PerfEventOpener() = default;
  /// perf_event_open(attr, pid, cpu, groupFd, flags). `pid` is a cgroup directory fd when
  /// flags has PERF_FLAG_PID_CGROUP. Errors carry errno (EACCES/EPERM: perf_event_paranoid or
  /// capability; ENOENT/EOPNOTSUPP: event not supported; EMFILE: RLIMIT_NOFILE).
  virtual Result<int> open(const perf_event_attr& attr, pid_t pid, int cpu, int groupFd,
                           unsigned long flags) = 0;
  /// Maps the ring: `length` = (1 + 2^n) pages; the first page is struct perf_event_mmap_page.
  virtual Result<void*> map(int fd, size_t length) = 0;
  /// Unmaps a ring returned by map().
  virtual void unmap(void* base, size_t length) = 0;
  /// PERF_EVENT_IOC_ENABLE / DISABLE.
  virtual Status enable(int fd, bool on) = 0;
  /// PERF_EVENT_IOC_PERIOD: new sample period (events per sample).
  virtual Status setPeriod(int fd, uint64_t period) = 0;
  /// close(2).
  virtual void close(int fd) = 0;
};

/// The real kernel interface (syscall(SYS_perf_event_open), mmap(PROT_READ|PROT_WRITE), ioctl).
class LinuxPerfEventOpener final : public PerfEventOpener {
 public:
  Result<int> open(const perf_event_attr& attr, pid_t pid, int cpu, int groupFd,
                   unsigned long flags) override;
  Result<void*> map(int fd, size_t length) override;
  void unmap(void* base, size_t length) override;
  Status enable(int fd, bool on) override;
  Status setPeriod(int fd, uint64_t period) override;
  void close(int fd) override;
};

}  // namespace tierd::telemetry

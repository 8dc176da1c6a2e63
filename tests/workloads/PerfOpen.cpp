// tierd-perfopen: one perf_event_open(2) of the attributes given, for checking which errno a PMU
// driver answers (rig: pmu-calibrate, against the emulated PMU of tests/vm/pmu).
//
// Usage: tierd-perfopen TYPE CONFIG [CONFIG1 [PRECISE_IP [SAMPLE_PERIOD]]]
//   numbers in C notation (0x.. hex); the event is for the calling process on any CPU, disabled,
//   kernel and hypervisor excluded (as tierd opens its samplers), sample_type IP|TID|ADDR|DATA_SRC
//   when SAMPLE_PERIOD > 0.
// Prints "ok" (exit 0) or "errno N NAME" (exit 1); exit 2 on bad arguments.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool parseU64(const char* s, unsigned long long& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s, &end, 0);
  return errno == 0 && end != s && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 6) {
    std::fprintf(stderr,
                 "usage: tierd-perfopen TYPE CONFIG [CONFIG1 [PRECISE_IP [SAMPLE_PERIOD]]]\n");
    return 2;
  }
  unsigned long long v[5] = {0, 0, 0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    if (!parseU64(argv[i], v[i - 1])) {
      std::fprintf(stderr, "tierd-perfopen: '%s' is not a number\n", argv[i]);
      return 2;
    }
  }
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = static_cast<unsigned>(v[0]);
  attr.config = v[1];
  attr.config1 = v[2];
  if (v[3] > 3) {
    // precise_ip is a 2-bit field: 4 and more cannot be asked for; refuse rather than wrap
    std::fprintf(stderr, "tierd-perfopen: precise_ip %llu does not fit its 2 bits\n", v[3]);
    return 2;
  }
  attr.precise_ip = static_cast<unsigned>(v[3]);
  attr.sample_period = v[4];
  if (attr.sample_period > 0) {
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC;
  }
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0UL);
  if (fd < 0) {
    const int err = errno;
    std::printf("errno %d %s\n", err, strerrorname_np(err) != nullptr ? strerrorname_np(err) : "?");
    return 1;
  }
  std::printf("ok\n");
  close(static_cast<int>(fd));
  return 0;
}

#pragma once
/// \file
/// Signal handling for the daemon loop: SIGTERM/SIGINT (stop) and SIGHUP (reload) are blocked in
/// every thread and read from a signalfd(2), so the loop can sleep until the next tick or a signal,
/// whichever comes first, and never runs code inside a signal handler.

#include <cstdint>
#include <memory>

#include "tierd/core/Result.h"

namespace tierd::daemon {

/// What woke the loop.
enum class Wake {
  Tick,    ///< the interval passed
  Stop,    ///< SIGTERM or SIGINT
  Reload,  ///< SIGHUP
};

/// Owns a signalfd for SIGTERM, SIGINT and SIGHUP. Create it in main() before any thread starts
/// (the mask is inherited). Restores the previous mask and closes the fd on destruction.
class SignalWaiter {
 public:
  /// Blocks the three signals and opens the signalfd. Errors: sigprocmask/signalfd failure.
  static Result<std::unique_ptr<SignalWaiter>> create();
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

  /// Waits up to `timeoutMs` (0 = just poll) for one of the signals. Returns Tick on timeout.
  /// A pending stop wins over a pending reload. EINTR is retried.
  Wake wait(int64_t timeoutMs);

  /// True once a stop signal has been seen by wait() or pollStop(); sticky.
  bool stopRequested() const { return stop_; }
  /// Non-blocking check between move_pages calls: drains pending signals, returns stopRequested().
  /// A reload seen here is remembered and returned by the next wait().
  bool pollStop();

 private:
  SignalWaiter(int fd, const void* oldMask);
  Wake drain();
  int fd_;
  unsigned char oldMask_[128];
  bool stop_ = false;
  bool reloadPending_ = false;
};

}  // namespace tierd::daemon

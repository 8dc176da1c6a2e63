#pragma once
/// \file
/// Signal handling for the daemon loop: SIGTERM/SIGINT (stop) and SIGHUP (reload) are blocked in
/// every thread and read from a signalfd(2), so the loop can sleep until the next tick or a signal,
/// whichever comes first, and never runs code inside a signal handler.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

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

/// The signal thread's loop: waits on `waiter` (at most `pollMs` at a time, so `quit` is seen)
/// and calls `onWake` with each Stop or Reload, on the calling thread. Returns once a Stop has
/// been passed on (a stop is final: there is nothing left to wait for, and the sticky Stop must
/// not be reported again and again), or when `quit` is set. Returns the number of wait() calls
/// made, so tests can check the loop does not spin.
uint64_t runSignalLoop(SignalWaiter& waiter, const std::atomic<bool>& quit,
                       const std::function<void(Wake)>& onWake, int64_t pollMs = 100);

/// runSignalLoop on a thread of its own, for the daemon. The destructor sets quit and joins, so
/// the thread is also joined when an exception unwinds the daemon (a joinable std::thread
/// would call std::terminate, and the engine's hotness sources would never be stopped).
class SignalThread {
 public:
  /// Starts the thread; `waiter` must outlive this object. `onWake` runs on the signal thread.
  SignalThread(SignalWaiter& waiter, std::function<void(Wake)> onWake);
  /// Sets quit and joins (returns within one poll interval, 100 ms).
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

 private:
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace tierd::daemon

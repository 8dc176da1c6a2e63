#include "tierd/daemon/Signals.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tierd::daemon {

static_assert(sizeof(sigset_t) <= 128, "sigset_t larger than the saved mask buffer");

Result<std::unique_ptr<SignalWaiter>> SignalWaiter::create() {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &set, &old) != 0)
    return Error::fromErrno("cannot block SIGTERM/SIGINT/SIGHUP", "pthread_sigmask");
  int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) {
    Error e = Error::fromErrno("cannot create signalfd", "signalfd");
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return e;
  }
  return std::unique_ptr<SignalWaiter>(new SignalWaiter(fd, &old));
}

SignalWaiter::SignalWaiter(int fd, const void* oldMask) : fd_(fd) {
  std::memcpy(oldMask_, oldMask, sizeof(sigset_t));
}

SignalWaiter::~SignalWaiter() {
  ::close(fd_);
  pthread_sigmask(SIG_SETMASK, reinterpret_cast<const sigset_t*>(oldMask_), nullptr);
}

Wake SignalWaiter::drain() {
  signalfd_siginfo info;
  for (;;) {
    ssize_t n = ::read(fd_, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) break;  // EAGAIN: nothing more pending
    if (info.ssi_signo == SIGHUP)
      reloadPending_ = true;
    else
      stop_ = true;
  }
  if (stop_) return Wake::Stop;
  if (reloadPending_) {
    reloadPending_ = false;
    return Wake::Reload;
  }
  return Wake::Tick;
}

Wake SignalWaiter::wait(int64_t timeoutMs) {
  if (stop_) return Wake::Stop;
  if (reloadPending_) {
    reloadPending_ = false;
    return Wake::Reload;
  }
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    int r = ::poll(&p, 1, static_cast<int>(timeoutMs < 0 ? 0 : timeoutMs));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Wake::Tick;
    return drain();
  }
}

bool SignalWaiter::pollStop() {
  bool reload = reloadPending_;
  Wake w = drain();
  if (w == Wake::Reload || reload) reloadPending_ = true;
  return stop_;
}

uint64_t runSignalLoop(SignalWaiter& waiter, const std::atomic<bool>& quit,
                       const std::function<void(Wake)>& onWake, int64_t pollMs) {
  uint64_t waits = 0;
  while (!quit.load()) {
    Wake w = waiter.wait(pollMs);
    ++waits;
    if (w == Wake::Tick) continue;
    onWake(w);
    if (w == Wake::Stop) break;  // sticky: every later wait() would return Stop at once
  }
  return waits;
}

SignalThread::SignalThread(SignalWaiter& waiter, std::function<void(Wake)> onWake)
    : thread_([this, &waiter, onWake = std::move(onWake)] {
        (void)runSignalLoop(waiter, quit_, onWake);
      }) {}

SignalThread::~SignalThread() {
  quit_.store(true);
  thread_.join();
}

}  // namespace tierd::daemon

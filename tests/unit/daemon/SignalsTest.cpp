#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <vector>

#include "tierd/daemon/Signals.h"

using namespace tierd::daemon;

TEST_CASE("SignalWaiter turns SIGHUP into Reload and SIGTERM into a sticky Stop") {
  auto w = SignalWaiter::create();
  REQUIRE(w.ok());
  std::unique_ptr<SignalWaiter> waiter = std::move(w.value());
  CHECK(waiter->wait(0) == Wake::Tick);

  REQUIRE(raise(SIGHUP) == 0);  // blocked: stays pending until the signalfd is read
  CHECK(waiter->wait(1000) == Wake::Reload);
  CHECK(waiter->wait(0) == Wake::Tick);

  // A reload seen while polling for stop between move_pages calls is not lost.
  REQUIRE(raise(SIGHUP) == 0);
  CHECK_FALSE(waiter->pollStop());
  CHECK(waiter->wait(0) == Wake::Reload);

  REQUIRE(raise(SIGTERM) == 0);
  CHECK(waiter->pollStop());
  CHECK(waiter->stopRequested());
  CHECK(waiter->wait(0) == Wake::Stop);
  CHECK(waiter->wait(1000) == Wake::Stop);
}

TEST_CASE(
    "the signal loop passes a stop on once and returns: it does not spin on the sticky Stop") {
  auto w = SignalWaiter::create();
  REQUIRE(w.ok());
  std::unique_ptr<SignalWaiter> waiter = std::move(w.value());
  REQUIRE(raise(SIGHUP) == 0);
  REQUIRE(raise(SIGTERM) == 0);
  std::atomic<bool> quit{false};
  std::vector<Wake> seen;
  // A loop that kept going after the stop would call back again and again; the guard ends it
  // (instead of hanging the test) and the checks below fail.
  const uint64_t waits = runSignalLoop(*waiter, quit, [&](Wake wake) {
    seen.push_back(wake);
    if (seen.size() >= 1000) quit.store(true);
  });
  CHECK(seen == std::vector<Wake>{Wake::Stop});  // a pending stop wins over a pending reload
  CHECK(waits == 1);
  CHECK(waiter->stopRequested());
}

TEST_CASE("the signal loop passes reloads on and ends when told to quit") {
  auto w = SignalWaiter::create();
  REQUIRE(w.ok());
  std::unique_ptr<SignalWaiter> waiter = std::move(w.value());
  REQUIRE(raise(SIGHUP) == 0);
  std::atomic<bool> quit{false};
  std::vector<Wake> seen;
  const uint64_t waits = runSignalLoop(
      *waiter, quit,
      [&](Wake wake) {
        seen.push_back(wake);
        quit.store(true);
      },
      0);
  CHECK(seen == std::vector<Wake>{Wake::Reload});
  CHECK(waits == 1);
  CHECK_FALSE(waiter->stopRequested());
}

#include <doctest/doctest.h>
#include <signal.h>

#include <memory>

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

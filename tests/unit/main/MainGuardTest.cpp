#include "tierd/main/MainGuard.h"

#include <doctest/doctest.h>

#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>

using namespace tierd::service;

TEST_CASE("runGuarded passes the program's exit code through and says nothing") {
  std::ostringstream err;
  CHECK(runGuarded(
            "tierd", [] { return 3; }, err) == 3);
  CHECK(err.str().empty());
}

TEST_CASE("an escaped exception becomes one line and a non-zero exit, after unwinding") {
  struct Source {
    bool* stopped;
    ~Source() { *stopped = true; }  // like Engine::~Engine stopping the hotness sources
  };
  bool stopped = false;
  std::ostringstream err;
  int rc = runGuarded(
      "tierd",
      [&]() -> int {
        Source s{&stopped};
        throw std::runtime_error("civetweb: cannot bind to 127.0.0.1:9464\nsecond line");
      },
      err);
  CHECK(rc == kExitUncaught);
  CHECK(rc != 0);
  CHECK(stopped);
  CHECK(err.str() == "tierd: fatal: civetweb: cannot bind to 127.0.0.1:9464 second line\n");
}

TEST_CASE("std::bad_alloc and unknown exceptions are reported too") {
  std::ostringstream err;
  CHECK(runGuarded(
            "tierctl", []() -> int { throw std::bad_alloc(); }, err) == kExitUncaught);
  CHECK(err.str().find("tierctl: fatal: out of memory") == 0);
  std::ostringstream err2;
  CHECK(runGuarded(
            "tierd", []() -> int { throw 42; }, err2) == kExitUncaught);
  CHECK(err2.str().find("tierd: fatal: an exception of unknown type") == 0);
}

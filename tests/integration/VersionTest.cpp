// `tierd --version` and `tierctl --version`: one line "tierd X.Y.Z", the version of
// CMakeLists.txt's project() (TIERD_PROJECT_VERSION, passed by tests/integration/CMakeLists.txt),
// exit 0.
#include <doctest/doctest.h>

#include <string>

#include "RunTierctl.h"

namespace {

// Runs the shell command `c`, returns its stdout; `rc` gets its exit status.
std::string capture(const std::string& c, int& rc) {
  tierd::itest::Run r = tierd::itest::runShell(c);
  rc = r.exitCode;
  return r.out;
}

}  // namespace

TEST_CASE("tierd --version and tierctl --version print the project's version") {
  const std::string expected = std::string("tierd ") + TIERD_PROJECT_VERSION + "\n";
  for (const char* program : {"tierd", "tierctl"}) {
    INFO(program);
    int rc = -1;
    CHECK(capture(std::string(TIERD_BIN_DIR) + "/" + program + " --version", rc) == expected);
    CHECK(rc == 0);
  }
  // tierd lists it in --help, and a value or an extra argument is a usage error.
  int rc = -1;
  CHECK(capture(std::string(TIERD_BIN_DIR) + "/tierd --help", rc).find("--version") !=
        std::string::npos);
  capture(std::string(TIERD_BIN_DIR) + "/tierd --version=1 2>/dev/null", rc);
  CHECK(rc == 2);
  capture(std::string(TIERD_BIN_DIR) + "/tierctl --version extra 2>/dev/null", rc);
  CHECK(rc == 2);
}

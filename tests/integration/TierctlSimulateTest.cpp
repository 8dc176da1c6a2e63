// tierctl simulate run as a binary on the checked-in traces (moved from the unit SimulatorTest:
// it runs build/bin/tierctl, so it is an integration test that depends on it).
#include <doctest/doctest.h>

#include <stdio.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tierd/core/Units.h"

using namespace tierd;

namespace {

const std::string kFixtures = TIERD_FIXTURES;
const std::string kQemu = kFixtures + "/topology/qemu-2node";

// Runs the shell command `c`, returns its stdout; `rc` gets pclose's wait status.
std::string capture(const std::string& c, int& rc) {
  std::string out;
  FILE* p = ::popen(c.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  rc = ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("tierctl simulate runs on the checked-in recorded trace, text and JSON") {
  const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierctl simulate --trace " + kFixtures +
                          "/traces/gups-sw-page-faults.trace --config " + kFixtures +
                          "/../../config/tierd-gups.toml --topology " + kQemu;
  int rc = -1;
  const std::string text = capture(cmd, rc);
  CHECK(rc == 0);
  CHECK(text.find("summary") != std::string::npos);
  CHECK(text.find("on-fast") != std::string::npos);
  int rc2 = -1;
  CHECK(capture(cmd, rc2) == text);
  const std::string json = capture(cmd + " --json", rc);
  CHECK(rc == 0);
  auto j = nlohmann::json::parse(json, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j["format"] == "tierd-simulate");
  CHECK(j["version"] == 1);
  CHECK(j["summary"]["samples"] == 200);
  CHECK(j["ticks"].size() >= 1);
  // Usage errors exit 2.
  capture(std::string(TIERD_BIN_DIR) + "/tierctl simulate --trace x 2>/dev/null", rc);
  CHECK(WEXITSTATUS(rc) == 2);
}

TEST_CASE("tierctl simulate --reuse-pid models the pid changing hands") {
  const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierctl simulate --trace " + kFixtures +
                          "/traces/gups-phases.trace --config " + kFixtures +
                          "/simulate/phases-quota.toml --topology " + kQemu + " --json";
  int rc = -1;
  auto j = nlohmann::json::parse(capture(cmd + " --reuse-pid 31337@2s", rc), nullptr, false);
  CHECK(rc == 0);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j["summary"]["pid_reuses"] == 1);
  CHECK(j["summary"]["promoted_bytes"] == 8 * kMiB);
  CHECK(j["summary"]["new_holder_moved_bytes"] == 0);
  capture(cmd + " --reuse-pid 31337 2>/dev/null", rc);
  CHECK(WEXITSTATUS(rc) == 2);
}

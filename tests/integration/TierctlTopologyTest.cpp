// Runs the built tierctl binary on the fixture trees and on this machine, as an operator would.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "RunTierctl.h"

namespace {

using tierd::itest::Run;
using tierd::itest::run;

nlohmann::json topologyJson(const std::string& fixture) {
  Run r = run("topology --json --sys-root " + std::string(TIERD_FIXTURES) + "/topology/" + fixture);
  REQUIRE_MESSAGE(r.exitCode == 0, r.out);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("tierctl topology --json on each fixture gives the documented tiers") {
  struct Expect {
    std::string fixture, method;
    std::vector<int> fast, slow;
  };
  const Expect cases[] = {
      {"host-1node", "single-tier", {0}, {}},      {"qemu-2node", "memory-tiers", {0}, {1}},
      {"qemu-3node", "memory-tiers", {0}, {1, 2}}, {"zen-nps2-cxl", "memory-tiers", {0, 1}, {2}},
      {"2socket-cxl", "cpu-less", {0, 1}, {2, 3}}, {"sparse-ids", "memory-tiers", {0, 1}, {16, 17}},
      {"memoryless-cpu", "cpu-less", {0, 2}, {4}}, {"cxl-same-tier", "hmat", {0, 1}, {2, 3}},
  };
  for (const Expect& e : cases) {
    CAPTURE(e.fixture);
    auto j = topologyJson(e.fixture);
    CHECK(j["method"] == e.method);
    CHECK(j["fast_nodes"].get<std::vector<int>>() == e.fast);
    CHECK(j["slow_nodes"].get<std::vector<int>>() == e.slow);
    for (const auto& n : j["nodes"])
      CHECK_FALSE(n["reason"].get<std::string>().empty());
  }
}

TEST_CASE("tierctl topology --json on this machine reports its nodes with capacity") {
  Run r = run("topology --json");
  REQUIRE_MESSAGE(r.exitCode == 0, r.out);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["nodes"].size() >= 1);
  CHECK(j["fast_nodes"].size() >= 1);
  for (const auto& n : j["nodes"]) {
    if (n["tier"] == "none") continue;
    CHECK(n["mem_total_bytes"].get<uint64_t>() > 0);
    CHECK(n["mem_free_bytes"].get<uint64_t>() <= n["mem_total_bytes"].get<uint64_t>());
  }
}

TEST_CASE("tierctl rejects bad usage and reports unreadable roots") {
  CHECK(run("topology --bogus").exitCode == 2);
  CHECK(run("topology extra").exitCode == 2);
  CHECK(run("nosuchcommand").exitCode == 2);
  Run missing = run("topology --sys-root /nonexistent-root");
  CHECK(missing.exitCode == 1);
  CHECK(missing.out.find("/nonexistent-root/sys/devices/system/node/online") != std::string::npos);
  Run help = run("topology --help");
  CHECK(help.exitCode == 0);
  CHECK(help.out.find("--json") != std::string::npos);
  CHECK(help.out.find("sys-root") == std::string::npos);  // hidden option
}

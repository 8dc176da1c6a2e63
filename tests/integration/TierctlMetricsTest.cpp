// Runs the built tierctl metrics subcommand as an operator would.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "RunTierctl.h"

namespace {

using tierd::itest::Run;
using tierd::itest::run;

}  // namespace

TEST_CASE("tierctl metrics --catalog --markdown prints docs/metrics.md") {
  Run r = run("metrics --catalog --markdown");
  REQUIRE(r.exitCode == 0);
  std::ifstream in(std::string(TIERD_FIXTURES) + "/../../docs/metrics.md");
  REQUIRE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  CHECK(r.out == doc.str());
}

TEST_CASE("tierctl metrics --catalog --json is the catalog as JSON") {
  Run r = run("metrics --catalog --json");
  REQUIRE(r.exitCode == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_array());
  CHECK(j.size() >= 25);
  bool found = false;
  for (const auto& m : j)
    if (m["name"] == "tierd_migrate_call_duration_seconds") {
      found = true;
      CHECK(m["type"] == "histogram");
      CHECK(m["labels"][0]["name"] == "direction");
      CHECK(m["labels"][0]["values"] == nlohmann::json::array({"promote", "demote"}));
      CHECK_FALSE(m["buckets"].empty());
    }
  CHECK(found);
}

TEST_CASE("tierctl metrics rejects missing and conflicting options") {
  CHECK(run("metrics").exitCode == 2);
  CHECK(run("metrics --catalog --json --markdown").exitCode == 2);
  CHECK(run("metrics --catalog --bogus").exitCode == 2);
  Run plain = run("metrics --catalog");
  CHECK(plain.exitCode == 0);
  CHECK(plain.out.find("tierd_migrate_bytes_total counter {direction,page_size,result}") !=
        std::string::npos);
}

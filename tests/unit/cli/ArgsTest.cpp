// The typed option getters of tierd/cli/Args.h: one grammar per kind of value, and sizes and
// durations exactly as the config compiler reads them (policy/ConfigUnits.h).
#include <doctest/doctest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/ConfigUnits.h"
#include "tests/workloads/SizeArg.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"

using namespace tierd;
using namespace tierd::cli;

namespace {

// Parses "--NAME VALUE" against a spec declaring NAME.
ParsedArgs one(const std::string& name, const std::string& value) {
  auto p = parseArgs({"prog", "--" + name, value}, 1, {{name, true, "", "V"}});
  REQUIRE(p.ok());
  return p.value();
}

ParsedArgs none() {
  auto p = parseArgs({"prog"}, 1, {{"x", true, "", "V"}});
  REQUIRE(p.ok());
  return p.value();
}

}  // namespace

TEST_CASE("an option's size means what it means in tierd.toml") {
  for (const char* text : {"1GiB", "64MiB", "4096B", "2TiB", "3KiB", "1G", "4096", "1gib", "2GB",
                           "1.5GiB", "-1GiB", "1 GiB", "", "99999999999999999999B"}) {
    CAPTURE(text);
    auto config = policy::parseByteSize(text);
    auto option = one("size", text).size("size", 0, 0);
    REQUIRE(option.ok() == config.ok());
    if (config.ok()) CHECK(option.value() == config.value());
    if (!option.ok()) {
      CHECK(option.error().context == "--size");
      CHECK(option.error().message.find(config.error().message) == 0);
    }
  }
  CHECK(one("size", "1GiB").size("size", 0).value() == 1ull << 30);
  CHECK(none().size("x", 4096).value() == 4096);        // absent: the fallback
  CHECK_FALSE(one("size", "0B").size("size", 1).ok());  // below lo (1 byte by default)
  CHECK_FALSE(one("size", "2GiB").size("size", 1, 1, 1ull << 30).ok());  // above hi
}

TEST_CASE("a size is what operators type: 4G and 4GiB are the same GiB in options and in config") {
  const std::pair<const char*, uint64_t> same[] = {
      {"4G", 4ull << 30}, {"4GiB", 4ull << 30}, {"64M", 64ull << 20},
      {"3K", 3ull << 10}, {"2T", 2ull << 40},   {"2TiB", 2ull << 40},
      {"0G", 0}};
  for (const auto& [text, bytes] : same) {
    CAPTURE(text);
    CHECK(policy::parseByteSize(text).value() == bytes);
    CHECK(one("size", text).size("size", 0, 0).value() == bytes);
  }
  // Printed in the long form; parsed back to the same value.
  CHECK(policy::formatByteSize(4ull << 30) == "4GiB");
  // Still refused: no unit, SI, lower case, a space, half-spelled units.
  for (const char* bad : {"4096", "4GB", "4g", "4gib", "4 G", "4Gi", "4GiBs", "G"}) {
    CAPTURE(bad);
    CHECK_FALSE(policy::parseByteSize(bad).ok());
    CHECK_FALSE(one("size", bad).size("size", 0, 0).ok());
  }
  CHECK(policy::parseByteSize("17179869184G").error().message.find("too large") !=
        std::string::npos);
}

TEST_CASE("the rig's workload tools take every size tierctl takes and read it the same") {
  for (const char* text : {"4G", "4GiB", "64M", "64MiB", "3K", "3KiB", "2T", "2TiB", "4096B"}) {
    CAPTURE(text);
    CHECK(workloads::parseSizeArg(text, "--size").value() == policy::parseByteSize(text).value());
  }
}

TEST_CASE("an option's duration means what it means in tierd.toml") {
  for (const char* text : {"500ms", "30s", "2m", "1h", "7ns", "10us", "30", "1sec", "1.5s", "-1s",
                           "1 s", "9999999999h"}) {
    CAPTURE(text);
    auto config = policy::parseDuration(text);
    auto option = one("every", text).durationNs("every", 0);
    REQUIRE(option.ok() == config.ok());
    if (config.ok()) CHECK(option.value() == config.value());
    if (!option.ok()) CHECK(option.error().context == "--every");
  }
  CHECK(none().durationNs("x", 60'000'000'000).value() == 60'000'000'000);
}

TEST_CASE("a pid option is a decimal 1..2^30 and required when asked for") {
  CHECK(one("pid", "1").pid("pid").value() == 1);
  CHECK(one("pid", "4194304").pid("pid").value() == 4194304);  // no process, but a pid
  CHECK(one("pid", "1073741824").pid("pid").value() == 1073741824);
  for (const char* bad :
       {"0", "-1", "+5", " 5", "5 ", "0x10", "abc", "1073741825", "99999999999999999999", ""}) {
    CAPTURE(bad);
    auto p = one("pid", bad).pid("pid");
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().kind == ErrorKind::Input);
    CHECK(p.error().context == "--pid");
  }
  auto absent = none().pid("pid");
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().message == "--pid is required");
}

TEST_CASE("a bounded integer option refuses signs, blanks, units and values out of range") {
  CHECK(one("runs", "5").integer("runs", 1, 0, 100).value() == 5);
  CHECK(one("runs", "0").integer("runs", 1, 0, 100).value() == 0);
  CHECK(one("runs", "100").integer("runs", 1, 0, 100).value() == 100);
  CHECK(none().integer("x", 7, 0, 100).value() == 7);
  for (const char* bad : {"101", "-1", "+1", " 1", "1 ", "1k", "", "18446744073709551616"}) {
    CAPTURE(bad);
    auto n = one("runs", bad).integer("runs", 1, 0, 100);
    REQUIRE_FALSE(n.ok());
    CHECK(n.error().context == "--runs");
    CHECK(n.error().message == "expected an integer in 0..100, got '" + std::string(bad) + "'");
  }
}

TEST_CASE("a command failing with an Internal error says it is a bug and exits 70") {
  const CommandSpec spec = {"tierctl test", "usage: tierctl test\n", {}};
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int internal = fail(spec, Error{0, ErrorKind::Internal, "no events", "perf"}, 1);
  const int env = fail(spec, Error::env("no PMU", "perf"), 1);
  const int usage = fail(spec, Error::input("expected a pid", "--pid"), 2);
  std::cerr.rdbuf(old);
  CHECK(internal == kExitInternal);
  CHECK(internal == 70);
  CHECK(env == 1);
  CHECK(usage == 2);
  CHECK(captured.str() ==
        "tierctl test: internal error (a bug in tierd, please report it): perf: no events\n"
        "tierctl test: perf: no PMU\n"
        "tierctl test: --pid: expected a pid\n");
}

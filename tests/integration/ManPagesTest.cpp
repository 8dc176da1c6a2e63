// The manual pages (docs/man/) are what `tierd --print-man-page` renders from the --help tables
// and the config schema: a drift test like docs/configuration.md's. TIERD_UPDATE_GOLDEN=1
// rewrites them (README.md). Each page is also checked by man(1) itself when it is installed.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/support/Golden.h"
#include "tests/unit/support/Skip.h"

#include "RunTierctl.h"

namespace {

const std::string kBin = TIERD_BIN_DIR;
const std::string kManDir = std::string(TIERD_FIXTURES) + "/../../docs/man";

// Runs the shell command `c`, returns its stdout; `rc` gets its exit status.
std::string capture(const std::string& c, int& rc) {
  tierd::itest::Run r = tierd::itest::runShell(c);
  rc = r.exitCode;
  return r.out;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("docs/man/ holds the pages tierd --print-man-page renders (drift test)") {
  for (const char* name : {"tierd.8", "tierctl.8", "tierd.toml.5"}) {
    const std::string page = name;
    INFO(page);
    int rc = -1;
    const std::string rendered = capture(kBin + "/tierd --print-man-page " + page, rc);
    REQUIRE(rc == 0);
    const std::string path = kManDir + "/" + page;
    if (tierd::testing::goldenUpdateRequested()) std::ofstream(path) << rendered;
    CHECK_MESSAGE(readText(path) == rendered,
                  "docs/man/" << page << " differs from `tierd --print-man-page " << page
                              << "`: regenerate with TIERD_UPDATE_GOLDEN=1 and review the diff");
  }
}

TEST_CASE("the pages carry every option of tierd --help and every tierctl command and config key") {
  int rc = -1;
  const std::string tierdPage = capture(kBin + "/tierd --print-man-page tierd.8", rc);
  const std::string help = capture(kBin + "/tierd --help", rc);
  REQUIRE(rc == 0);
  std::istringstream lines(help);
  std::string line;
  int options = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  --", 0) != 0) continue;
    const std::string name = line.substr(4, line.find(' ', 4) - 4);
    std::string escaped;
    for (char c : name)
      escaped += c == '-' ? std::string("\\-") : std::string(1, c);
    CHECK_MESSAGE(tierdPage.find("\\fB\\-\\-" + escaped + "\\fR") != std::string::npos, name);
    ++options;
  }
  CHECK(options >= 5);

  const std::string tierctlPage = capture(kBin + "/tierd --print-man-page tierctl.8", rc);
  const std::string usage = capture(kBin + "/tierctl --help", rc);
  REQUIRE(rc == 0);
  std::istringstream commands(usage);
  int listed = 0;
  bool inList = false;
  while (std::getline(commands, line)) {
    if (line == "commands:") {
      inList = true;
    } else if (inList && line.rfind("  ", 0) == 0) {
      const std::string name = line.substr(2, line.find(' ', 2) - 2);
      CHECK_MESSAGE(tierctlPage.find(".SS " + name + "\n") != std::string::npos, name);
      ++listed;
    } else {
      inList = false;
    }
  }
  CHECK(listed >= 5);
  CHECK(tierctlPage.find(".SS \"bench migrate\"") != std::string::npos);

  const std::string configPage = capture(kBin + "/tierd --print-man-page tierd.toml.5", rc);
  const std::string schema = capture(kBin + "/tierd --print-config-schema", rc);
  REQUIRE(rc == 0);
  std::istringstream rows(schema);
  int keys = 0;
  while (std::getline(rows, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::string key = line.substr(3, line.find('`', 3) - 3);
    std::string escaped;
    for (char c : key)
      escaped += c == '-' ? std::string("\\-") : std::string(1, c);
    CHECK_MESSAGE(configPage.find(".TP\n\\fB" + escaped + "\\fR\n") != std::string::npos, key);
    ++keys;
  }
  CHECK(keys >= 20);
}

TEST_CASE("man(1) renders each page without a warning") {
  int rc = -1;
  capture("command -v man >/dev/null 2>&1", rc);
  if (rc != 0) TIERD_SKIP("man(1) is not installed (man-db)");
  for (const char* name : {"tierd.8", "tierctl.8", "tierd.toml.5"}) {
    const std::string page = name;
    INFO(page);
    const std::string warnings =
        capture("LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z " + kManDir + "/" +
                    page + " 2>&1 >/dev/null",
                rc);
    CHECK(rc == 0);
    CHECK_MESSAGE(warnings.empty(), warnings);
  }
}

TEST_CASE("an unknown page is a usage error naming the three") {
  int rc = -1;
  const std::string err = capture(kBin + "/tierd --print-man-page tierd.1 2>&1", rc);
  CHECK(rc == 2);
  CHECK(err.find("tierd.toml.5") != std::string::npos);
}

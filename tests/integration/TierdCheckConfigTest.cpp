// tierd --check-config and --print-config-schema, and tierctl bench heat, run as binaries: the
// exit codes and the full error lists of the config fixtures (moved from the unit ConfigTest:
// these run build/bin programs, so they are integration tests that depend on them).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/ConfigSchema.h"

using namespace tierd::policy;

namespace {

const std::string kFixtures = TIERD_FIXTURES;
const std::string kRepo = kFixtures + "/../..";

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// Runs a command line, returns its exit status; stdout and stderr go to `out` and `err`.
int run(const std::string& cmd, std::string& out, std::string& err) {
  std::string dir =
      std::filesystem::temp_directory_path() / ("tierd-run-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int rc = std::system((cmd + " >" + dir + "/out 2>" + dir + "/err").c_str());
  out = readText(dir + "/out");
  err = readText(dir + "/err");
  std::filesystem::remove_all(dir);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("tierd --check-config exits 0 on good files and 1 with every error on bad ones") {
  std::string out, err;
  const std::string tierd = std::string(TIERD_BIN_DIR) + "/tierd";
  for (const char* f : {"tierd.toml", "tierd-redis.toml", "tierd-gapbs.toml", "tierd-gups.toml"}) {
    CHECK_MESSAGE(run(tierd + " --check-config --config " + kRepo + "/config/" + f, out, err) == 0,
                  f);
    CHECK(out.find("[daemon]") != std::string::npos);
  }
  CHECK(run("cd " + kFixtures + " && " + tierd +
                " --check-config --config config/invalid/broken.toml",
            out, err) == 1);
  CHECK(err == readText(kFixtures + "/config/invalid/broken.errors") +
                   "tierd: config/invalid/broken.toml: 24 errors\n");
  CHECK(run(tierd + " --print-config-schema", out, err) == 0);
  CHECK(out == renderSchemaMarkdown());
}

TEST_CASE("tierctl bench heat --json prints its figures") {
  std::string out, err;
  REQUIRE(run(std::string(TIERD_BIN_DIR) +
                  "/tierctl bench heat --json --gib 1 --samples 20000 --runs 1",
              out, err) == 0);
  for (const char* key : {"\"ingest_samples_per_cpu_second\"", "\"model_bytes_per_tracked_gib\"",
                          "\"tracked_bytes\": 1073741824", "\"regions\": 512"})
    CHECK_MESSAGE(out.find(key) != std::string::npos, key);
}

TEST_CASE("source = replay: tierd --check-config fails on a missing or malformed trace") {
  // The real check (tierd --check-config reads the trace with telemetry::parseTrace).
  std::string stdoutText, err;
  const std::string tierd = std::string(TIERD_BIN_DIR) + "/tierd";
  for (const char* name : {"replay-missing", "replay-bad-header"}) {
    const std::string f = std::string("config/invalid/") + name;
    CHECK(run("cd " + kFixtures + " && " + tierd + " --check-config --config " + f + ".toml",
              stdoutText, err) == 1);
    CHECK_MESSAGE(
        err == readText(kFixtures + "/" + f + ".errors") + "tierd: " + f + ".toml: 1 error\n", err);
  }
}

namespace {

// A private directory (0755, as the owner and mode rules want) for the files a test makes.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/tierd-check-config-XXXXXX";
    REQUIRE(::mkdtemp(name));
    path = name;
    REQUIRE(::chmod(path.c_str(), 0755) == 0);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// `tierd --check-config --config PATH` under a timeout (a read that blocks fails the test
// instead of hanging it): its exit status and stderr.
int checkConfig(const std::string& path, std::string& err) {
  std::string out;
  return run("timeout 120 " + std::string(TIERD_BIN_DIR) + "/tierd --check-config --config " + path,
             out, err);
}

}  // namespace

TEST_CASE("tierd --check-config refuses a directory, a FIFO, a device and a too-large file") {
  // Before: a directory compiled as an empty config (exit 0), a FIFO hung, /dev/zero was read
  // until memory ran out.
  TempDir d;
  const std::string fifo = d.path + "/fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string big = d.path + "/big.toml";
  std::ofstream(big) << std::string(kMaxConfigFileBytes + 1, '\n');
  REQUIRE(::chmod(big.c_str(), 0644) == 0);
  const std::pair<std::string, std::string> cases[] = {
      {d.path, "the config file is not a regular file (a directory)"},
      {fifo, "the config file is not a regular file (a FIFO)"},
      {"/dev/zero", "the config file is not a regular file (a character device)"},
      {big,
       "the config file is larger than 1048576 bytes, tierd's limit for a config or profile "
       "file"},
  };
  for (const auto& [path, why] : cases) {
    std::string err;
    CHECK_MESSAGE(checkConfig(path, err) == 1, path);
    CHECK(err == path + ": refusing the config file: " + why + "\ntierd: " + path + ": 1 error\n");
  }
}

TEST_CASE("tierd --check-config applies the daemon's owner and mode rules") {
  // Before: --check-config accepted a file the daemon then refused to start with.
  TempDir d;
  const std::string config = d.path + "/tierd.toml";
  std::ofstream(config) << "[daemon]\nmetrics_listen = \"\"\n";
  REQUIRE(::chmod(config.c_str(), 0644) == 0);
  std::string err;
  CHECK(checkConfig(config, err) == 0);
  REQUIRE(::chmod(config.c_str(), 0664) == 0);
  CHECK(checkConfig(config, err) == 1);
  CHECK_MESSAGE(
      err.find(config + ": refusing a config file writable by group or others (mode 0664)") == 0,
      err);
}

TEST_CASE("tierd --check-config on a 100000-part dotted key: one error at the key, no crash") {
  // Before: toml++ overflowed the stack (SIGSEGV).
  TempDir d;
  const std::string config = d.path + "/tierd.toml";
  std::string key = "a";
  for (int i = 1; i < 100000; ++i)
    key += ".a";
  std::ofstream(config) << "[daemon]\n" << key << " = 1\n";
  REQUIRE(::chmod(config.c_str(), 0644) == 0);
  std::string err;
  CHECK(checkConfig(config, err) == 1);
  CHECK(err == config +
                   ":2:1: a dotted key or table header of more than 16 parts (tierd's limit, "
                   "checked before parsing)\ntierd: " +
                   config + ": 1 error\n");
  std::ofstream(config, std::ios::trunc) << "x = " << std::string(100000, '[') << "\n";
  CHECK(checkConfig(config, err) == 1);
  CHECK(err.find(config + ":1:21: more than 16 arrays or tables nested") == 0);
}

TEST_CASE("tierd --check-config checks the metrics credentials file as the daemon's start does") {
  // Before: a missing basic-auth file passed the check and then stopped the daemon's start.
  TempDir d;
  const std::string config = d.path + "/tierd.toml";
  const std::string auth = d.path + "/metrics.auth";
  std::ofstream(config) << "[daemon]\nmetrics_basic_auth_file = \"metrics.auth\"\n";
  REQUIRE(::chmod(config.c_str(), 0644) == 0);
  std::string err;
  CHECK(checkConfig(config, err) == 1);
  CHECK_MESSAGE(err.find(config + ": daemon.metrics_basic_auth_file: ") == 0, err);
  CHECK_MESSAGE(err.find(auth) != std::string::npos, err);
  std::ofstream(auth) << "prometheus:s3cret\n";
  REQUIRE(::chmod(auth.c_str(), 0644) == 0);  // readable by others: the daemon refuses it too
  CHECK(checkConfig(config, err) == 1);
  CHECK_MESSAGE(err.find("readable or writable by group or others") != std::string::npos, err);
  REQUIRE(::chmod(auth.c_str(), 0600) == 0);
  CHECK_MESSAGE(checkConfig(config, err) == 0, err);
}

TEST_CASE("tierd --check-config prints allow_kernel_tiering and every key it compiled") {
  TempDir d;
  const std::string config = d.path + "/tierd.toml";
  std::ofstream(config) << "[migration]\nallow_kernel_tiering = true\n[[workload]]\nname = \"w\"\n"
                           "command = \"redis-server\"\nuid = 1000\n";
  REQUIRE(::chmod(config.c_str(), 0644) == 0);
  std::string out, err;
  REQUIRE_MESSAGE(
      run(std::string(TIERD_BIN_DIR) + "/tierd --check-config --config " + config, out, err) == 0,
      err);
  CHECK_MESSAGE(out.find("\nallow_kernel_tiering = true\n") != std::string::npos, out);
  CHECK_MESSAGE(out.find("\nuid = 1000\n") != std::string::npos, out);
}

TEST_CASE("the fixture that sets every key passes --check-config, with its credentials file") {
  // A copy of config/valid/ with the private metrics.auth its full.toml names (git keeps no
  // 0600 mode, and the daemon refuses a credentials file others can read).
  TempDir d;
  std::filesystem::copy(kFixtures + "/config/valid", d.path + "/valid",
                        std::filesystem::copy_options::recursive);
  const std::string auth = d.path + "/valid/metrics.auth";
  std::ofstream(auth) << "prometheus:s3cret\n";
  REQUIRE(::chmod(auth.c_str(), 0600) == 0);
  const std::string tierd = std::string(TIERD_BIN_DIR) + "/tierd";
  std::string out, err;
  CHECK_MESSAGE(
      run(tierd + " --check-config --json --config " + d.path + "/valid/full.toml", out, err) == 0,
      err);
  CHECK(out.find("\"fast_quota\" : \"12.5%\"") != std::string::npos);
  // A readable, well-formed trace passes (the fixture's traces/gups.trace).
  CHECK_MESSAGE(
      run(tierd + " --check-config --config " + d.path + "/valid/full.toml", out, err) == 0, err);
}

// Runs the real tierd binary as an operator would: ticks, SIGHUP with broken configs (an unknown
// key, a dotted key too deep for toml++) and then a fixed one, SIGTERM. Polls its log with a
// bounded wait (no fixed sleeps, no timing assertions).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/unit/support/Skip.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1))
    ++n;
  return n;
}

// Waits until the log contains `needle` at least `times` times (at most 60 s).
bool waitFor(const fs::path& log, const std::string& needle, size_t times = 1) {
  for (int i = 0; i < 6000; ++i) {
    if (count(slurp(log), needle) >= times) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

const char* kGood = R"([daemon]
interval = "100ms"
progress_interval = "0s"
dry_run = true
metrics_listen = ""
control_socket = ""
[[workload]]
name = "sleepers"
command = "itest-sleeper"
)";

// Starts `tierd --config CONFIG` with its stderr in `log`; returns its pid.
pid_t spawnTierd(const fs::path& config, const fs::path& log) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stderr);
    (void)f;
    const std::string bin = std::string(TIERD_BIN_DIR) + "/tierd";
    execl(bin.c_str(), "tierd", "--config", config.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("tierd ticks, keeps its config on a broken reload, takes a fixed one, stops on SIGTERM") {
  char tmpl[] = "/tmp/tierd-daemon-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;
  const fs::path config = dir / "tierd.toml";
  const fs::path log = dir / "tierd.log";
  std::ofstream(config) << kGood;

  const pid_t pid = spawnTierd(config, log);
  CHECK(waitFor(log, "tick 2:"));
  CHECK(count(slurp(log), "sleepers pids=0") >= 2);

  // A broken config: the errors are logged with file:line:column, the old config stays.
  std::ofstream(config, std::ios::trunc) << "[daemon]\nintervall = \"1s\"\n";
  REQUIRE(kill(pid, SIGHUP) == 0);
  CHECK(waitFor(log, "reload failed; keeping the running config"));
  CHECK(slurp(log).find(config.string() + ":2:1: daemon.intervall: unknown key") !=
        std::string::npos);
  const size_t ticksBefore = count(slurp(log), "tierd: tick ");
  CHECK(waitFor(log, "tierd: tick ", ticksBefore + 2));  // still ticking

  // A dotted key of 100000 parts overflowed toml++'s stack and killed the daemon; now it is a
  // broken config like the one above.
  std::string key = "a";
  for (int i = 1; i < 100000; ++i)
    key += ".a";
  std::ofstream(config, std::ios::trunc) << "[daemon]\n" << key << " = 1\n";
  REQUIRE(kill(pid, SIGHUP) == 0);
  CHECK(waitFor(log, "reload failed; keeping the running config", 2));
  CHECK(slurp(log).find(config.string() + ":2:1: a dotted key or table header of more than") !=
        std::string::npos);
  const size_t ticksAfter = count(slurp(log), "tierd: tick ");
  CHECK(waitFor(log, "tierd: tick ", ticksAfter + 2));

  // A fixed config is taken at the next tick boundary.
  std::ofstream(config, std::ios::trunc) << kGood;
  REQUIRE(kill(pid, SIGHUP) == 0);
  CHECK(waitFor(log, "config reloaded"));

  REQUIRE(kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(log).find("tierd: stopped after") != std::string::npos);
  fs::remove_all(dir);
}

// A "CapXxx:" mask of /proc/PID/status.
uint64_t capMask(const std::string& status, const std::string& field) {
  const size_t at = status.find(field + ":\t");
  REQUIRE(at != std::string::npos);
  return std::stoull(status.substr(at + field.size() + 2, 16), nullptr, 16);
}

TEST_CASE("tierd run as root keeps only CAP_SYS_NICE, CAP_SYS_PTRACE and CAP_PERFMON") {
  const uint64_t kKeep = (1ull << 23) | (1ull << 19) | (1ull << 38);
  const uint64_t mine = capMask(slurp("/proc/self/status"), "CapEff");
  if (::geteuid() != 0 || (mine & ~kKeep) == 0) TIERD_SKIP("needs root with capabilities to drop");
  char tmpl[] = "/tmp/tierd-daemon-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;
  const fs::path config = dir / "tierd.toml";
  const fs::path log = dir / "tierd.log";
  std::ofstream(config) << kGood;
  const pid_t pid = spawnTierd(config, log);
  CHECK(waitFor(log, "tick 1:"));
  // Every thread (the metrics answering thread and the signal thread too) has the reduced sets.
  // CAP_SETUID and CAP_SETGID, which switched the exporter process's user, are gone from the
  // permitted set; the bounding set keeps them (dropping from it needs CAP_SETPCAP).
  const uint64_t kSpawn = (1ull << 6) | (1ull << 7);
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    const std::string status = slurp(task.path() / "status");
    CHECK(capMask(status, "CapEff") == (mine & kKeep));
    CHECK(capMask(status, "CapPrm") == (mine & kKeep));
    CHECK((capMask(status, "CapBnd") & ~(kKeep | kSpawn)) == 0);
    CHECK(capMask(status, "CapInh") == 0);
    CHECK(capMask(status, "CapAmb") == 0);
  }
  REQUIRE(kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(log).find("capabilities reduced to CAP_SETGID CAP_SETUID CAP_SYS_PTRACE "
                        "CAP_SYS_NICE") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("tierd refuses to start on a broken config and names every error") {
  char tmpl[] = "/tmp/tierd-daemon-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;
  const fs::path config = dir / "bad.toml";
  std::ofstream(config) << "[daemon]\ninterval = \"2 s\"\n[migraton]\n";
  const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierd --once --config " + config.string() +
                          " 2>" + (dir / "err").string();
  int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 1);
  const std::string err = slurp(dir / "err");
  CHECK(err.find(config.string() + ":2:12: daemon.interval") != std::string::npos);
  CHECK(err.find(config.string() + ":3:2: migraton: unknown section") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("tierd refuses source = replay once at start, naming the offline replay command") {
  char tmpl[] = "/tmp/tierd-daemon-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;
  const fs::path config = dir / "replay.toml";
  // A valid trace: --check-config accepts the file, the daemon does not run it.
  fs::copy_file(std::string(TIERD_FIXTURES) + "/traces/gups-sw-page-faults.trace",
                dir / "gups.trace");
  std::ofstream(config) << kGood << "[sampling]\nsource = \"replay\"\ntrace = \"gups.trace\"\n";
  const std::string err = (dir / "err").string();
  int status = std::system((std::string(TIERD_BIN_DIR) + "/tierd --check-config --config " +
                            config.string() + " >/dev/null 2>" + err)
                               .c_str());
  CHECK_MESSAGE(WEXITSTATUS(status) == 0, slurp(err));
  status = std::system(
      (std::string(TIERD_BIN_DIR) + "/tierd --once --config " + config.string() + " 2>" + err)
          .c_str());
  CHECK(WEXITSTATUS(status) == 1);
  const std::string text = slurp(err);
  CHECK_MESSAGE(count(text, "sampling.source = \"replay\" is not supported by the daemon") == 1,
                text);
  CHECK(text.find("tierctl simulate --trace " + (dir / "gups.trace").string()) !=
        std::string::npos);
  fs::remove_all(dir);
}

namespace {

// Runs `tierctl ARGS` and returns its exit code; its stdout and stderr go to `out`.
int tierctl(const std::string& args, const fs::path& out) {
  const std::string cmd =
      std::string(TIERD_BIN_DIR) + "/tierctl " + args + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("tierctl status, pause and resume reach a running tierd through its control socket") {
  char tmpl[] = "/tmp/tierd-daemon-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;
  const fs::path config = dir / "tierd.toml";
  const fs::path log = dir / "tierd.log";
  const fs::path out = dir / "tierctl.out";
  const fs::path socket = dir / "run" / "control.sock";
  std::ofstream(config)
      << "[daemon]\ninterval = \"100ms\"\nprogress_interval = \"0s\"\nmetrics_listen = "
         "\"\"\ndry_run = true\ncontrol_socket = \""
      << socket.string() << "\"\n[[workload]]\nname = \"sleepers\"\ncommand = \"itest-sleeper\"\n";
  const pid_t pid = spawnTierd(config, log);
  REQUIRE(waitFor(log, "tick 2:"));
  const std::string sock = " --socket " + socket.string();
  REQUIRE(tierctl("status --json" + sock, out) == 0);
  const auto doc = nlohmann::json::parse(slurp(out));
  CHECK(doc["pid"] == pid);
  CHECK(doc["dry_run"] == true);
  CHECK(doc["paused"] == false);
  CHECK(doc["tick"].get<uint64_t>() >= 2);
  REQUIRE(doc["workloads"].size() == 1);
  CHECK(doc["workloads"][0]["name"] == "sleepers");
  CHECK(doc["workloads"][0]["state"] == "dry-run");
  REQUIRE(tierctl("status" + sock, out) == 0);
  CHECK_MESSAGE(slurp(out).find("state: dry run: plans only, no page moves") != std::string::npos,
                slurp(out));
  CHECK(slurp(out).find("sleepers         dry-run") != std::string::npos);

  CHECK(tierctl("pause" + sock, out) == 0);
  CHECK(slurp(out).find("paused: tierd moves no pages") != std::string::npos);
  CHECK(waitFor(log, "paused by the operator"));
  REQUIRE(tierctl("status --json" + sock, out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["paused"] == true);
  CHECK(tierctl("pause --workload nosuch" + sock, out) == 1);
  CHECK(slurp(out).find("no workload 'nosuch' in the config (sleepers)") != std::string::npos);
  CHECK(tierctl("restore --workload sleepers" + sock, out) == 1);
  CHECK(slurp(out).find("a dry run moves no pages: nothing to restore") != std::string::npos);
  CHECK(tierctl("restore" + sock, out) == 2);  // usage: the workload is required
  CHECK(tierctl("resume" + sock, out) == 0);
  REQUIRE(tierctl("status --json" + sock, out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["paused"] == false);

  REQUIRE(kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(socket));  // removed at the stop
  CHECK(tierctl("status" + sock, out) == 1);
  CHECK(slurp(out).find("is tierd running") != std::string::npos);
  fs::remove_all(dir);
}

// Runs `tierd --dry-run` as an operator would and scrapes its /metrics endpoint: every family of
// the metric catalog is declared (names read from the catalog, not spelled here; this alone
// cannot fail on zeros, so tierd-model-exporter, the tick engine moving memory on the model
// kernel with the daemon's metrics, is scraped too and its families must hold real
// observations: counters > 0, histograms with _count > 0, moves in both directions), a second tierd
// on the same address fails with a clear message and exit 1, SIGTERM stops it with exit 0. Also:
// the daemon refuses a config file that group or others can write. Bounded polls, no sleeps
// that decide the result, no timing assertions.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "RunTierctl.h"
#include "telemetry/metrics/Catalog.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The port a tierd started with metrics_listen = "127.0.0.1:0" serves (the kernel picked it, so
// no other test can take it between a pick and the bind), read from its log line "metrics on
// http://127.0.0.1:PORT/metrics" (at most 60 s); 0 when it died or never said.
int boundPort(const fs::path& log, pid_t daemon) {
  const std::string marker = "metrics on http://127.0.0.1:";
  for (int i = 0; i < 6000; ++i) {
    const std::string text = slurp(log);
    // Only a whole line counts: a line being written may show a port's first digits only.
    if (const size_t at = text.find(marker); at != std::string::npos) {
      const size_t digits = at + marker.size();
      const size_t end = text.find_first_not_of("0123456789", digits);
      if (end != std::string::npos && end > digits && text.compare(end, 8, "/metrics") == 0)
        return std::atoi(text.c_str() + digits);
    }
    int status = 0;
    if (::waitpid(daemon, &status, WNOHANG) == daemon) return 0;  // it died
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// GET http://127.0.0.1:port`path`: the whole response; nullopt when nothing answers yet.
std::optional<std::string> get(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (out.rfind("HTTP/1.", 0) != 0) return std::nullopt;
  return out;
}

// GET http://127.0.0.1:port/metrics; nullopt when nothing answers 200 yet.
std::optional<std::string> scrape(int port) {
  auto out = get(port, "/metrics");
  if (!out || out->rfind("HTTP/1.1 200 ", 0) != 0) return std::nullopt;
  return out;
}

// GET http://127.0.0.1:port/metrics until it answers 200 (at most 30 s: on a loaded machine the
// daemon's answer to its exporter may miss the exporter's 5 s wait, and that scrape fails).
std::optional<std::string> scrapeWithin(int port) {
  for (int i = 0; i < 300; ++i) {
    if (auto body = scrape(port)) return body;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

// GET /healthz until it answers 200 (at most 60 s); the last response.
std::string waitHealthy(int port) {
  std::string last;
  for (int i = 0; i < 6000; ++i) {
    if (auto r = get(port, "/healthz")) last = *r;
    if (last.rfind("HTTP/1.1 200 ", 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return last;
}

// Polls until a scrape shows the first whole tick's metrics (at most 60 s): the tick sets the
// workload gauges after its progress line is logged, and the last-tick timestamp when it ends. A
// render caught between the two is what the exporter serves for the next kMinRenderGapMs
// (telemetry/metrics/ExporterProcess.h), so waiting for the gauges alone raced the tick's end.
std::optional<std::string> waitForMetrics(int port, pid_t daemon) {
  for (int i = 0; i < 6000; ++i) {
    int status = 0;
    if (::waitpid(daemon, &status, WNOHANG) == daemon) return std::nullopt;  // it died
    if (auto body = scrape(port);
        body && body->find("\ntierd_daemon_last_tick_timestamp_seconds 1") != std::string::npos)
      return body;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

pid_t spawnTierd(const fs::path& config, const fs::path& log) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stderr);
    (void)f;
    const std::string bin = std::string(TIERD_BIN_DIR) + "/tierd";
    execl(bin.c_str(), "tierd", "--dry-run", "--config", config.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tierd-metrics-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("tierd --dry-run serves every catalog family, and a second tierd on its port fails") {
  TempDir dir;
  const fs::path config = dir.path / "tierd.toml";
  const auto writeConfig = [&config](const std::string& listen) {
    std::ofstream(config) << "[daemon]\ninterval = \"100ms\"\nmetrics_listen = \"" << listen
                          << "\"\ncontrol_socket = \"\"\n[[workload]]\nname = \"sleepers\"\n"
                             "command = \"itest-sleeper\"\n";
  };
  writeConfig("127.0.0.1:0");
  const fs::path log = dir.path / "tierd.log";
  const pid_t pid = spawnTierd(config, log);
  const int port = boundPort(log, pid);
  REQUIRE_MESSAGE(port > 0, slurp(log));
  const std::string listen = "127.0.0.1:" + std::to_string(port);

  auto body = waitForMetrics(port, pid);
  REQUIRE_MESSAGE(body.has_value(), "no /metrics on " << listen << "; log:\n" << slurp(log));
  for (const auto& def : tierd::telemetry::catalog()) {
    const std::string type =
        "# TYPE " + def.name + " " + tierd::telemetry::metricTypeName(def.type);
    CHECK_MESSAGE(body->find(type + "\n") != std::string::npos, "missing family " << def.name);
  }
  // Values the loop sets: build info, a workload label from the config, ticks in dry-run mode.
  CHECK(body->find("tierd_build_info{version=") != std::string::npos);
  CHECK(body->find("tierd_workload_migrated_bytes_total{direction=\"promote\",workload="
                   "\"sleepers\"} 0") != std::string::npos);
  CHECK(body->find("tierd_config_reloads_total{result=\"failure\"} 0") != std::string::npos);
  CHECK(body->find("tierd_kernel_capability_available{capability=\"move_pages\"}") !=
        std::string::npos);
  CHECK(slurp(log).find("tierd: tick 1:") != std::string::npos);
  // A host without a CPU-less node (this one, as a rule) has nothing to tier, and tierd says so.
  if (slurp("/sys/devices/system/node/has_cpu") == slurp("/sys/devices/system/node/online"))
    CHECK_MESSAGE(slurp(log).find("tierd: warning: nothing to tier: this host has no slow tier") !=
                      std::string::npos,
                  slurp(log));
  // The loop's health and the process metrics, on the same port.
  const std::string health = waitHealthy(port);
  CHECK_MESSAGE(health.find("\r\n\r\nok: the last tick finished ") != std::string::npos, health);
  body = scrapeWithin(port);
  REQUIRE(body.has_value());
  CHECK(body->find("tierd_daemon_ticks_total{result=\"ok\"} ") != std::string::npos);
  CHECK(body->find("tierd_daemon_ticks_total{result=\"failed\"} 0") != std::string::npos);
  CHECK_MESSAGE(body->find("\ntierd_daemon_last_tick_timestamp_seconds 1") != std::string::npos,
                *body);
  CHECK(body->find("\nprocess_cpu_seconds_total ") != std::string::npos);
  CHECK(body->find("\nprocess_open_fds ") != std::string::npos);

  // A second daemon on the same address: a clear startup error, exit 1, no abort.
  writeConfig(listen);
  const fs::path log2 = dir.path / "second.log";
  const pid_t second = spawnTierd(config, log2);
  int status2 = 0;
  REQUIRE(::waitpid(second, &status2, 0) == second);
  CHECK(WIFEXITED(status2));
  CHECK(WEXITSTATUS(status2) == 1);
  const std::string err = slurp(log2);
  CHECK_MESSAGE(err.find("Address already in use") != std::string::npos, err);
  CHECK_MESSAGE(err.find("metrics listen address " + listen) != std::string::npos, err);
  CHECK(scrapeWithin(port).has_value());  // the first one still serves

  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(log).find("tierd: stopped after") != std::string::npos);
}

TEST_CASE("tierd refuses a config file that group or others can write") {
  TempDir dir;
  const fs::path config = dir.path / "tierd.toml";
  std::ofstream(config) << "[daemon]\nmetrics_listen = \"\"\ncontrol_socket = \"\"\n";
  for (mode_t mode : {mode_t(0664), mode_t(0646)}) {
    REQUIRE(::chmod(config.c_str(), mode) == 0);
    const fs::path err = dir.path / "err";
    const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierd --once --dry-run --config " +
                            config.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    CHECK(WEXITSTATUS(status) == 1);
    const std::string text = slurp(err);
    CHECK_MESSAGE(
        text.find("refusing a config file writable by group or others") != std::string::npos, text);
    CHECK_MESSAGE(text.find(config.string()) != std::string::npos, text);
  }
  // The same file, writable by its owner only, is accepted.
  REQUIRE(::chmod(config.c_str(), 0644) == 0);
  const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierd --once --dry-run --config " +
                          config.string() + " 2>/dev/null";
  CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 0);
}

namespace {

// Reads one datagram from the fake systemd notification socket (at most 60 s).
std::string receive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 60'000) != 1) return "";
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Receives datagrams until one contains `what`; returns every datagram seen (at most 200).
std::vector<std::string> receiveUntil(int fd, const std::string& what) {
  std::vector<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string m = receive(fd);
    if (m.empty()) break;
    seen.push_back(m);
    if (m.find(what) != std::string::npos) break;
  }
  return seen;
}

bool contains(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& m : v)
    if (m.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("tierd tells systemd READY, RELOADING, READY, STOPPING and pets the watchdog") {
  TempDir dir;
  const fs::path sockPath = dir.path / "notify";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sockPath.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);

  const fs::path config = dir.path / "tierd.toml";
  std::ofstream(config)
      << "[daemon]\ninterval = \"100ms\"\nmetrics_listen = \"\"\ncontrol_socket = \"\"\n";
  const fs::path log = dir.path / "tierd.log";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stderr);
    (void)f;
    ::setenv("NOTIFY_SOCKET", sockPath.c_str(), 1);
    ::setenv("WATCHDOG_USEC", "200000", 1);  // pet every 100 ms
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    const std::string bin = std::string(TIERD_BIN_DIR) + "/tierd";
    execl(bin.c_str(), "tierd", "--dry-run", "--config", config.c_str(), nullptr);
    _exit(127);
  }
  auto first = receiveUntil(fd, "READY=1");
  REQUIRE_MESSAGE(contains(first, "READY=1"), slurp(log));
  CHECK(contains(first, "STATUS=tick 1, 0 workloads, dry run"));
  CHECK(contains(receiveUntil(fd, "WATCHDOG=1"), "WATCHDOG=1"));

  REQUIRE(::kill(pid, SIGHUP) == 0);
  auto reload = receiveUntil(fd, "RELOADING=1");
  CHECK(contains(reload, "RELOADING=1\nMONOTONIC_USEC="));
  CHECK(contains(receiveUntil(fd, "READY=1"), "READY=1"));

  REQUIRE(::kill(pid, SIGTERM) == 0);
  CHECK(contains(receiveUntil(fd, "STOPPING=1"), "STOPPING=1"));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(fd);
}

namespace {

// One sample line of the Prometheus text format: name, labels as written ("" when none), value.
struct PromSample {
  std::string name, labels;
  double value = 0;
};

std::vector<PromSample> parseSamples(const std::string& body) {
  std::vector<PromSample> out;
  std::istringstream in(
      body.substr(body.find("\r\n\r\n") == std::string::npos ? 0 : body.find("\r\n\r\n") + 4));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    PromSample s;
    if (brace != std::string::npos && brace < space) {
      s.name = line.substr(0, brace);
      s.labels = line.substr(brace, line.rfind('}', space) - brace + 1);
    } else {
      s.name = line.substr(0, space);
    }
    s.value = std::strtod(line.c_str() + space + 1, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

// The largest value among a family's samples whose labels contain `labelPart` (histograms:
// their _count series).
double largest(const std::vector<PromSample>& samples, const tierd::telemetry::MetricDef& def,
               const std::string& labelPart = "") {
  const std::string name =
      def.type == tierd::telemetry::MetricType::Histogram ? def.name + "_count" : def.name;
  double best = 0;
  for (const auto& s : samples)
    if (s.name == name && s.labels.find(labelPart) != std::string::npos)
      best = std::max(best, s.value);
  return best;
}

}  // namespace

TEST_CASE("after ticks that moved memory, every family that counts moves has real observations") {
  using tierd::telemetry::catalog;
  // Families that may stay 0 (or absent) in this run, and why. Everything else must have a
  // nonzero sample.
  const std::map<std::string, std::string> mayBeZero = {
      {"tierd_sampler_lost_samples_total", "the scripted source loses nothing (perf LOST only)"},
      {"tierd_sampler_throttle_events_total", "no PERF_RECORD_THROTTLE from a scripted source"},
      {"tierd_sampler_period_events", "0 for sources that are not perf sources"},
      {"tierd_sampler_interval_seconds", "only DAMON reports an interval"},
      {"tierd_sampler_open_perf_events", "perf sources only"},
      {"tierd_sampler_source_retries_total", "no source failed"},
      {"tierd_sampler_budget_backoffs_total", "a scripted source has no CPU budget to exceed"},
      {"tierd_sampler_paused_seconds_total", "no settled wait: daemon.settled_interval is off"},
      {"tierd_placement_settled", "1 only 10 ticks after the last move: a gauge, 0 while moving"},
      {"tierd_daemon_errors_total", "a clean run: nothing failed"},
      {"tierd_config_reloads_total", "no SIGHUP"},
      {"tierd_kernel_vmstat_events_total", "the fixture's /proc/vmstat does not change"},
      {"tierd_kernel_migrate_offload_events_total",
       "the fixture's kernel has no kernel-patches/ patch 3"},
      {"tierd_metrics_rejected_updates_total", "must be 0: checked below"},
      {"tierd_migrate_thp_split_after_move_total", "the model kernel splits no THP by itself"},
      {"tierd_migrate_identity_check_failures_total", "no pid is reused"},
      {"tierd_scope_pid_reuses_total", "no pid is reused"},
  };
  const std::string exporter = std::string(TIERD_BIN_DIR) + "/../tests/tierd-model-exporter";
  TempDir dir;
  const fs::path out = dir.path / "exporter.out";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* f = freopen(out.c_str(), "w", stdout);
    (void)f;
    execl(exporter.c_str(), "tierd-model-exporter", "--fixtures", TIERD_FIXTURES, "--max-seconds",
          "120", nullptr);
    _exit(127);
  }
  int port = 0;
  for (int i = 0; i < 6000 && port == 0; ++i) {  // at most 60 s for the warm-up ticks
    const std::string text = slurp(out);
    if (text.rfind("listening on port ", 0) == 0 && text.find('\n') != std::string::npos)
      port = std::atoi(text.c_str() + 18);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE_MESSAGE(port > 0, "tierd-model-exporter did not start: " << slurp(out));
  auto body = scrape(port);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(body.has_value());
  const auto samples = parseSamples(*body);

  for (const auto& def : catalog()) {
    if (mayBeZero.count(def.name)) continue;
    INFO(def.name);
    CHECK(largest(samples, def) > 0);
  }
  // The families that count moves: in both directions.
  for (const char* name :
       {"tierd_migrate_bytes_total", "tierd_migrate_pages_total",
        "tierd_migrate_call_duration_seconds", "tierd_migrate_system_cpu_seconds_total",
        "tierd_workload_migrated_bytes_total", "tierd_arbiter_pingpong_moves_total"})
    for (const char* direction : {"direction=\"promote\"", "direction=\"demote\""}) {
      INFO((std::string(name) + " " + direction));
      CHECK(largest(samples, *tierd::telemetry::findMetric(name), direction) > 0);
    }
  CHECK(largest(samples, *tierd::telemetry::findMetric("tierd_migrate_bytes_total"),
                "result=\"moved\"") > 0);
  for (const char* tier : {"tier=\"fast\"", "tier=\"slow\""}) {
    INFO(std::string(tier));
    CHECK(largest(samples, *tierd::telemetry::findMetric("tierd_workload_memory_bytes"), tier) > 0);
  }
  CHECK(largest(samples, *tierd::telemetry::findMetric("tierd_metrics_rejected_updates_total")) ==
        0);
}

TEST_CASE("daemon.log_level and daemon.progress_interval shape what tierd writes") {
  TempDir dir;
  const fs::path config = dir.path / "tierd.toml";
  auto runTicks = [&](const std::string& daemonKeys) {
    std::ofstream(config)
        << "[daemon]\nmetrics_listen = \"\"\ncontrol_socket = \"\"\ninterval = \"100ms\"\n"
        << daemonKeys << "[[workload]]\nname = \"none\"\npids = [4194304]\n";
    REQUIRE(::chmod(config.c_str(), 0644) == 0);
    const fs::path err = dir.path / "err";
    const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierd --dry-run --ticks 4 --config " +
                            config.string() + " 2>" + err.string();
    CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 0);
    return slurp(err);
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  std::string log = runTicks("progress_interval = \"0s\"\n");
  CHECK_MESSAGE(count(log, "tierd: tick ") == 4, log);  // every tick
  // Quiet ticks (a workload that matches nothing), by default: the first line, then one a
  // minute.
  log = runTicks("");
  CHECK_MESSAGE(count(log, "tierd: tick ") == 1, log);
  CHECK(log.find("tierd: tick 1:") != std::string::npos);
  // notice: no progress lines at all, the stop line and warnings still.
  log = runTicks("log_level = \"notice\"\n");
  CHECK_MESSAGE(count(log, "tierd: tick ") == 0, log);
  CHECK_MESSAGE(log.find("tierd: stopped after 4 ticks") != std::string::npos, log);
  CHECK_MESSAGE(log.find("tierd: warning: ") != std::string::npos, log);
}

namespace {

// "Key:\tvalue" of /proc/PID/status.
std::string statusField(pid_t pid, const std::string& key) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

// The inode of the socket listening on 127.0.0.1:`port` (/proc/net/tcp, state 0A), or "".
std::string listeningInode(int port) {
  std::istringstream in(slurp("/proc/net/tcp"));
  std::string line;
  char want[32];
  std::snprintf(want, sizeof want, "0100007F:%04X", port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
    f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (local == want && st == "0A") return inode;
  }
  return "";
}

// Whether process `pid` holds the socket `inode` open.
bool holdsSocket(pid_t pid, const std::string& inode) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    if (fs::read_symlink(e.path(), lec).string() == "socket:[" + inode + "]") return true;
  }
  return false;
}

}  // namespace

TEST_CASE(
    "the metrics exporter is a process of its own, unprivileged, and tierd tiers on when "
    "it ends") {
  TempDir dir;
  const fs::path config = dir.path / "tierd.toml";
  std::ofstream(config)
      << "[daemon]\ninterval = \"100ms\"\nprogress_interval = \"0s\"\nmetrics_listen = "
         "\"127.0.0.1:0\"\ncontrol_socket = \""
      << (dir.path / "control.sock").string()
      << "\"\n[[workload]]\nname = \"sleepers\"\n"
         "command = \"itest-sleeper\"\n";
  const fs::path log = dir.path / "tierd.log";
  const pid_t pid = spawnTierd(config, log);
  const int port = boundPort(log, pid);
  REQUIRE_MESSAGE(port > 0, slurp(log));
  REQUIRE_MESSAGE(waitForMetrics(port, pid).has_value(), slurp(log));

  // The log names the exporter's pid; it is tierd's child, runs `tierd --metrics-exporter`
  // named tierd-exporter.
  const std::string text = slurp(log);
  const size_t at = text.find("served by pid ");
  REQUIRE_MESSAGE(at != std::string::npos, text);
  const pid_t exporter = std::atoi(text.c_str() + at + 14);
  REQUIRE(exporter > 0);
  CHECK(statusField(exporter, "PPid") == std::to_string(pid));
  std::string cmdline = slurp("/proc/" + std::to_string(exporter) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  CHECK(cmdline == "tierd-exporter --metrics-exporter ");
  CHECK(slurp("/proc/" + std::to_string(exporter) + "/comm") == "tierd-exporter\n");
  // Unprivileged: daemon.metrics_user's uid (nobody by default) when tierd is root, tierd's own
  // otherwise; no capability in any set; no_new_privs.
  const std::string uid = std::to_string(::geteuid() == 0 ? 65534 : ::getuid());
  CHECK(statusField(exporter, "Uid") == uid + "\t" + uid + "\t" + uid + "\t" + uid);
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    CHECK_MESSAGE(statusField(exporter, set) == "0000000000000000", set);
  CHECK(statusField(exporter, "NoNewPrivs") == "1");
  // Nothing of the daemon's stdio, and no controlling terminal: a session of its own.
  for (int fd = 0; fd <= 2; ++fd)
    CHECK(fs::read_symlink("/proc/" + std::to_string(exporter) + "/fd/" + std::to_string(fd)) ==
          "/dev/null");
  {
    std::istringstream stat(slurp("/proc/" + std::to_string(exporter) + "/stat"));
    std::string field;
    std::vector<std::string> fields;
    while (stat >> field)
      fields.push_back(field);
    REQUIRE(fields.size() > 6);
    CHECK(fields[5] == std::to_string(exporter));  // session id
    CHECK(fields[6] == "0");                       // tty_nr
  }
  // The exporter serves the listening socket; the daemon keeps its copy, so the port stays
  // tierd's even when the exporter is gone.
  const std::string inode = listeningInode(port);
  REQUIRE(!inode.empty());
  CHECK(holdsSocket(exporter, inode));
  CHECK(holdsSocket(pid, inode));
  // The root daemon gave up the capabilities that switched the exporter's user.
  if (::geteuid() == 0) {
    const uint64_t eff = std::stoull(statusField(pid, "CapEff"), nullptr, 16);
    CHECK((eff & ((1ull << 6) | (1ull << 7))) == 0);  // CAP_SETGID, CAP_SETUID
  }
  // What a scrape shows comes from the daemon: its tick loop's health and its workloads.
  CHECK(waitHealthy(port).find("\r\n\r\nok: the last tick finished ") != std::string::npos);

  // The exporter gone (any process of its user could kill it): tierd says so once and tiers on;
  // nobody else can bind the port meanwhile.
  REQUIRE(::kill(exporter, SIGKILL) == 0);
  const std::string gone = "tierd: error: the metrics exporter process (pid " +
                           std::to_string(exporter) +
                           ") ended (killed by signal 9); metrics are "
                           "down until tierd restarts, tiering goes on";
  for (int i = 0; i < 3000 && slurp(log).find(gone) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_MESSAGE(slurp(log).find(gone) != std::string::npos, slurp(log));
  {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0);
    ::close(s);
  }
  const size_t ticksBefore = slurp(log).rfind("tierd: tick ");
  for (int i = 0; i < 3000 && slurp(log).rfind("tierd: tick ") == ticksBefore; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(slurp(log).rfind("tierd: tick ") != ticksBefore);  // still ticking
  // tierctl status says the metrics are down (the status of the next tick).
  const std::string statusArgs = "status --socket " + (dir.path / "control.sock").string();
  std::string shown;
  for (int i = 0; i < 300 && shown.find("metrics: down") == std::string::npos; ++i) {
    shown = tierd::itest::run(statusArgs).out;
    if (shown.find("metrics: down") == std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_MESSAGE(shown.find("metrics: down: the exporter process (pid " + std::to_string(exporter) +
                           ") ended; back when tierd restarts") != std::string::npos,
                shown);
  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);

  // Started with its standard descriptors closed, tierd still serves (its log lines must not land
  // in the exporter's channel, which would otherwise take descriptor 2).
  {
    const fs::path quietSocket = dir.path / "quiet.sock";
    std::ofstream(config) << "[daemon]\ninterval = \"100ms\"\nmetrics_listen = \"127.0.0.1:0\"\n"
                             "control_socket = \""
                          << quietSocket.string() << "\"\n";
    const pid_t closed = fork();
    REQUIRE(closed >= 0);
    if (closed == 0) {
      ::close(0);
      ::close(1);
      ::close(2);
      const std::string bin = std::string(TIERD_BIN_DIR) + "/tierd";
      execl(bin.c_str(), "tierd", "--dry-run", "--config", config.c_str(), nullptr);
      _exit(127);
    }
    // No log to read the port from: tierctl status --json names the bound address.
    int quiet = 0;
    const std::string marker = "\"listen\":\"127.0.0.1:";
    for (int i = 0; i < 6000 && quiet == 0; ++i) {
      const std::string json =
          tierd::itest::run("status --json --socket " + quietSocket.string()).out;
      if (const size_t from = json.find(marker); from != std::string::npos)
        quiet = std::atoi(json.c_str() + from + marker.size());
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(quiet > 0);
    CHECK(waitHealthy(quiet).find("\r\n\r\nok: the last tick finished ") != std::string::npos);
    REQUIRE(::kill(closed, SIGTERM) == 0);
    REQUIRE(::waitpid(closed, &status, 0) == closed);
    CHECK(WEXITSTATUS(status) == 0);
  }

  // An exporter user that does not exist stops the start with a clear error.
  if (::geteuid() == 0) {
    std::ofstream(config) << "[daemon]\nmetrics_listen = \"127.0.0.1:0\"\n"
                             "metrics_user = \"tierd-no-such-user\"\ncontrol_socket = \"\"\n";
    const fs::path log2 = dir.path / "nouser.log";
    const pid_t bad = spawnTierd(config, log2);
    REQUIRE(::waitpid(bad, &status, 0) == bad);
    CHECK(WEXITSTATUS(status) == 1);
    CHECK_MESSAGE(slurp(log2).find("cannot serve metrics: tierd-no-such-user: no such user "
                                   "(daemon.metrics_user names the metrics exporter's user)") !=
                      std::string::npos,
                  slurp(log2));
  }
}

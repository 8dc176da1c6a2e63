// The control socket (tierd/daemon/Control.h): request parsing, a real socket in a temporary
// directory (mode, stale and live sockets, the peer's uid), and the status document's text form.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tierd/daemon/Control.h"
#include "tierd/daemon/ControlStatus.h"

using namespace tierd;
using namespace tierd::daemon;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/control-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

// A handler that echoes the request it got.
std::string echo(const ControlRequest& r) {
  return nlohmann::json{{"ok", true}, {"message", formatControlRequest(r)}}.dump();
}

}  // namespace

TEST_CASE("control requests: verbs, a workload, errors") {
  using V = ControlRequest::Verb;
  CHECK(parseControlRequest("status\n").value() == ControlRequest{V::Status, ""});
  CHECK(parseControlRequest("pause").value() == ControlRequest{V::Pause, ""});
  CHECK(parseControlRequest("pause redis\r\n").value() == ControlRequest{V::Pause, "redis"});
  CHECK(parseControlRequest("  resume   gups ").value() == ControlRequest{V::Resume, "gups"});
  CHECK(parseControlRequest("restore gups").value() == ControlRequest{V::Restore, "gups"});
  CHECK(parseControlRequest("restore").error().message.find("needs a workload") !=
        std::string::npos);
  CHECK(parseControlRequest("status gups").error().message.find("too many") != std::string::npos);
  CHECK(parseControlRequest("pause a b").error().message.find("too many") != std::string::npos);
  CHECK(parseControlRequest("reboot").error().message.find("unknown request 'reboot'") !=
        std::string::npos);
  CHECK_FALSE(parseControlRequest("").ok());
  CHECK(formatControlRequest({V::Restore, "redis"}) == "restore redis");
  CHECK(formatControlRequest({V::Status, ""}) == "status");
}

TEST_CASE("the control socket answers one request per connection, mode 0600") {
  TempDir dir;
  const std::string path = (dir.path / "control.sock").string();
  auto server = ControlServer::start(path, echo);
  REQUIRE_MESSAGE(server.ok(), server.error().describe());
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  auto a = controlCall(path, {ControlRequest::Verb::Restore, "gups"});
  REQUIRE_MESSAGE(a.ok(), a.error().describe());
  CHECK(nlohmann::json::parse(a.value())["message"] == "restore gups");
  auto b = controlCall(path, {ControlRequest::Verb::Status, ""});
  REQUIRE(b.ok());
  CHECK(nlohmann::json::parse(b.value())["message"] == "status");

  SUBCASE("a second server on a live socket is refused; the first one keeps serving") {
    auto second = ControlServer::start(path, echo);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().message.find("another process serves") != std::string::npos);
    CHECK(controlCall(path, {ControlRequest::Verb::Status, ""}).ok());
  }
  SUBCASE("stopping removes the socket; no tierd there is ECONNREFUSED or ENOENT") {
    server.value().reset();
    CHECK_FALSE(fs::exists(path));
    auto none = controlCall(path, {ControlRequest::Verb::Status, ""});
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == ENOENT);
  }
}

TEST_CASE("a socket file nothing serves is replaced, a regular file is not") {
  TempDir dir;
  const std::string path = (dir.path / "control.sock").string();
  {
    auto first = ControlServer::start(path, echo);
    REQUIRE(first.ok());
    // A tierd killed with SIGKILL leaves its socket file: made here by binding a socket that
    // is closed without unlinking it.
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
  REQUIRE(fs::exists(path));
  auto again = ControlServer::start(path, echo);
  REQUIRE_MESSAGE(again.ok(), again.error().describe());
  CHECK(controlCall(path, {ControlRequest::Verb::Status, ""}).ok());
  again.value().reset();

  std::ofstream(path) << "not a socket\n";
  auto refused = ControlServer::start(path, echo);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("not a socket") != std::string::npos);
  CHECK(fs::is_regular_file(path));  // left as it was
}

TEST_CASE("a peer that is neither root nor tierd's user is refused" *
          doctest::skip(::geteuid() != 0)) {
  TempDir dir;
  ::chmod(dir.path.c_str(), 0755);
  const std::string path = (dir.path / "control.sock").string();
  std::atomic<int> handled{0};
  auto server = ControlServer::start(path, [&](const ControlRequest& r) {
    ++handled;
    return echo(r);
  });
  REQUIRE(server.ok());
  ::chmod(path.c_str(), 0666);  // so that only the uid check stands between
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    auto a = controlCall(path, {ControlRequest::Verb::Pause, ""});
    if (!a.ok()) ::_exit(4);
    const auto j = nlohmann::json::parse(a.value());
    ::_exit(j.value("ok", true) == false &&
                    j.value("error", "").find("permission denied") != std::string::npos
                ? 0
                : 5);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(handled.load() == 0);
  CHECK(server.value()->refusedPeers() == 1);
}

TEST_CASE("the status document and its text form") {
  TickReport report;
  report.fastNodes = {0};
  report.slowNodes = {1};
  report.topologyMethod = "memory-tiers";
  report.plannedPromoteBytes = 4 << 20;
  report.promotedBytes = 2 << 20;
  report.arbiter.skippedBudget = 3;
  WorkloadReport w;
  w.name = "redis";
  w.pids = 2;
  w.fastBytes = 100 << 20;
  w.slowBytes = 300 << 20;
  w.hotFastBytes = 10 << 20;
  w.hotSlowBytes = 4 << 20;
  w.plannedPromoteBytes = 4 << 20;
  w.movedBytes = 2 << 20;
  report.workloads = {w};
  report.sourceStates.push_back({77, "damon-vaddr", "sample_us=500 regions=12", 0, 0, 0, 0, 0, 0});
  StatusFacts f;
  f.pid = 1234;
  f.version = "9.9.9";
  f.configPath = "/etc/tierd/tierd.toml";
  f.tick = 42;
  f.intervalNs = 1'000'000'000;
  f.source = "damon-vaddr";
  f.sourceWhy = "DAMON vaddr";
  f.report = &report;
  f.pidWorkloads[77] = "redis";
  f.hold.restore["redis"] = 1;
  f.restores["redis"].movedBytes = 6 << 20;
  f.restores["redis"].ticks = 2;
  f.restores["redis"].done = true;
  const auto doc = nlohmann::json::parse(statusDocument(f));
  CHECK(doc["pid"] == 1234);
  CHECK(doc["tiers"]["slow"] == nlohmann::json::array({1}));
  CHECK(doc["last_tick"]["not_moved"]["budget"] == 3);
  REQUIRE(doc["workloads"].size() == 1);
  CHECK(doc["workloads"][0]["state"] == "restored");
  CHECK(doc["workloads"][0]["hot_bytes"]["slow"] == 4 << 20);
  CHECK(doc["workloads"][0]["sources"][0]["pid"] == 77);
  CHECK(doc["workloads"][0]["restore"]["moved_bytes"] == 6 << 20);
  auto text = formatStatus(doc.dump());
  REQUIRE(text.ok());
  CHECK(text.value().find("tierd 9.9.9, pid 1234") != std::string::npos);
  CHECK(text.value().find("not moved: budget=3") != std::string::npos);
  CHECK(text.value().find("redis            restored      2") != std::string::npos);
  CHECK(text.value().find("restore redis: done, moved back 6.0 MiB in 2 ticks") !=
        std::string::npos);
  CHECK(text.value().find("metrics: off\n") != std::string::npos);
  // The exporter process: serving, then gone (tierd tiers on without metrics).
  f.metricsListen = "127.0.0.1:9464";
  f.exporterPid = 4321;
  f.exporterUid = 65534;
  f.exporterServing = true;
  const auto serving = nlohmann::json::parse(statusDocument(f));
  CHECK(serving["metrics"]["exporter_pid"] == 4321);
  CHECK(serving["metrics"]["serving"] == true);
  CHECK(formatStatus(serving.dump())
            .value()
            .find("metrics: http://127.0.0.1:9464/metrics, served by pid 4321 (uid 65534)\n") !=
        std::string::npos);
  f.exporterServing = false;
  CHECK(formatStatus(statusDocument(f))
            .value()
            .find("metrics: down: the exporter process (pid 4321) ended; back when tierd "
                  "restarts\n") != std::string::npos);
  CHECK_FALSE(formatStatus("{").ok());
  CHECK_FALSE(formatStatus("{\"pid\": 1}").ok());
}

TEST_CASE("the status answer shows the holds asked since the last tick") {
  TickReport report;
  WorkloadReport a, b;
  a.name = "a";
  b.name = "b";
  report.workloads = {a, b};
  StatusFacts f;
  f.report = &report;
  f.hold.restore["b"] = 3;
  f.restores["b"].request = 3;
  f.restores["b"].done = true;
  const std::string doc = statusDocument(f);
  OperatorHold wanted;
  wanted.workloads.insert("a");
  wanted.restore["b"] = 3;
  auto d = nlohmann::json::parse(statusWithHold(doc, wanted));
  CHECK(d["paused"] == false);
  CHECK(d["workloads"][0]["state"] == "paused");
  CHECK(d["workloads"][1]["state"] == "restored");
  wanted.restore["b"] = 4;  // asked again: not done until the engine answers request 4
  d = nlohmann::json::parse(statusWithHold(doc, wanted));
  CHECK(d["workloads"][1]["state"] == "restoring");
  CHECK_FALSE(d["workloads"][1].contains("restore"));  // request 3's "done" says nothing of 4
  wanted = {};
  wanted.all = true;  // `tierctl pause` after a resume of b
  d = nlohmann::json::parse(statusWithHold(doc, wanted));
  CHECK(d["paused"] == true);
  CHECK(d["workloads"][1]["state"] == "paused");
  CHECK_FALSE(d["workloads"][1].contains("restore"));
  CHECK(statusWithHold("not json", wanted) == "not json");
}

TEST_CASE("the control socket's directory must be its owner's alone") {
  TempDir dir;
  REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
  const std::string path = (dir.path / "control.sock").string();
  auto refused = ControlServer::start(path, echo);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("writable by group or others") != std::string::npos);
  CHECK_FALSE(fs::exists(path));
  REQUIRE(::chmod(dir.path.c_str(), 0755) == 0);
  CHECK(ControlServer::start(path, echo).ok());
}

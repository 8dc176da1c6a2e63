// What tierd and tierctl leave in DAMON, on a sysfs tree of plain files given as --sys-root (the
// host's DAMON is never written): a start reclaims a killed tierd's kdamonds and tracefs
// instances before its config is read; a dry run leaves DAMON_STAT as it is, a real run turns it
// on again at its stop; tierctl record and hotness remove their kdamond on SIGINT and SIGTERM.
// Every wait is bounded and polls (no fixed sleeps, no timing assertions).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const std::string kKdamonds = "sys/kernel/mm/damon/admin/kdamonds";

// A temporary --sys-root with DAMON sysfs as plain files (nr_kdamonds 0), a boot id and /run.
struct Tree {
  fs::path dir;
  Tree() {
    char tmpl[] = "/tmp/tierd-damon-recovery-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    put(dir / kKdamonds / "nr_kdamonds", "0\n");
    put(dir / "proc/sys/kernel/random/boot_id", "b00t\n");
    fs::create_directories(dir / "run");
  }
  ~Tree() { fs::remove_all(dir); }
  fs::path owner() const { return dir / "run/tierd/damon.owner"; }
  std::string attr(const std::string& rel) const {
    std::string s = slurp(dir / rel);
    while (!s.empty() && s.back() == '\n')
      s.pop_back();
    return s;
  }
  // The files of kdamond 0 that a DamonSource writes (a plain file stands for each).
  void kdamondFiles() const {
    const fs::path k = dir / kKdamonds / "0";
    for (const char* f : {"contexts/nr_contexts", "contexts/0/operations",
                          "contexts/0/monitoring_attrs/intervals/sample_us",
                          "contexts/0/monitoring_attrs/intervals/aggr_us",
                          "contexts/0/monitoring_attrs/intervals/update_us",
                          "contexts/0/monitoring_attrs/nr_regions/min",
                          "contexts/0/monitoring_attrs/nr_regions/max",
                          "contexts/0/targets/nr_targets", "contexts/0/targets/0/pid_target",
                          "contexts/0/schemes/nr_schemes", "contexts/0/schemes/0/action"})
      put(k / f, "0\n");
    for (const char* f : {"sz", "nr_accesses", "age"})
      for (const char* m : {"min", "max"})
        put(k / "contexts/0/schemes/0/access_pattern" / f / m, "0\n");
    fs::create_directories(k / "contexts/0/schemes/0/tried_regions");
    put(k / "contexts/0/avail_operations", "paddr\nvaddr\n");
    put(k / "state", "off\n");
    put(k / "pid", "4242\n");
  }
};

int runTierd(const Tree& t, const std::string& config, const std::string& extra) {
  const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierd --once --sys-root " +
                          t.dir.string() + " --config " + config + " " + extra + " 2>" +
                          (t.dir / "err").string();
  return WEXITSTATUS(std::system(cmd.c_str()));
}

const char* kConfig = R"([daemon]
interval = "100ms"
metrics_listen = ""
[sampling]
damon_stat = "disable"
[[workload]]
name = "sleepers"
command = "itest-sleeper"
)";

}  // namespace

TEST_CASE(
    "a start reclaims a killed tierd's kdamond and trace instance before reading its config") {
  Tree t;
  // What SIGKILL left: kdamond 0 running for 501, its record, its tracefs instance (whose
  // kdamond is gone: /proc/4242 does not exist in the tree).
  put(t.dir / kKdamonds / "nr_kdamonds", "1\n");
  t.kdamondFiles();
  put(t.dir / kKdamonds / "0/state", "on\n");
  put(t.dir / kKdamonds / "0/contexts/nr_contexts", "1\n");
  put(t.dir / kKdamonds / "0/contexts/0/operations", "vaddr\n");
  put(t.dir / kKdamonds / "0/contexts/0/targets/0/pid_target", "501\n");
  put(t.owner(),
      "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=1\n"
      "kdamond=0 pid=4242 operations=vaddr target=501\n");
  fs::create_directories(t.dir / "sys/kernel/tracing/instances/tierd-4242");
  fs::create_directories(t.dir / "sys/kernel/tracing/instances/other-tracer");
  // A config that does not load: the start ends there.
  const fs::path bad = t.dir / "bad.toml";
  put(bad, "[daemon]\nintervall = \"1s\"\n");
  CHECK(runTierd(t, bad.string(), "") == 1);
  const std::string err = slurp(t.dir / "err");
  CHECK_MESSAGE(err.find("DAMON: reclaimed 1 kdamonds") != std::string::npos, err);
  CHECK(err.find("daemon.intervall: unknown key") != std::string::npos);
  CHECK(t.attr(kKdamonds + "/0/state") == "off");
  CHECK(t.attr(kKdamonds + "/nr_kdamonds") == "0");
  CHECK_FALSE(fs::exists(t.owner()));
  // Removed with the default read mode (tried regions) too; another tracer's is left.
  CHECK_FALSE(fs::exists(t.dir / "sys/kernel/tracing/instances/tierd-4242"));
  CHECK(fs::exists(t.dir / "sys/kernel/tracing/instances/other-tracer"));
}

TEST_CASE("a dry run leaves DAMON_STAT on and a real run turns it off and on again at its stop") {
  Tree t;
  const fs::path enabled = t.dir / "sys/module/damon_stat/parameters/enabled";
  put(enabled, "Y\n");
  const fs::path config = t.dir / "tierd.toml";
  put(config, kConfig);
  CHECK(runTierd(t, config.string(), "--dry-run") == 0);
  std::string err = slurp(t.dir / "err");
  CHECK_MESSAGE(err.find("dry run: DAMON_STAT left on") != std::string::npos, err);
  CHECK(t.attr("sys/module/damon_stat/parameters/enabled") == "Y");

  CHECK(runTierd(t, config.string(), "") == 0);
  err = slurp(t.dir / "err");
  CHECK_MESSAGE(err.find("turned DAMON_STAT off") != std::string::npos, err);
  CHECK(err.find("turned DAMON_STAT on again") != std::string::npos);
  CHECK(t.attr("sys/module/damon_stat/parameters/enabled") == "Y");
}

// tierctl ARGS over the tree, signalled with `sig` once its kdamond exists: it must still be
// running then, and must remove its kdamond and its ownership record before it exits.
void signalledTierctl(const std::string& args, int sig) {
  Tree t;
  t.kdamondFiles();
  const fs::path out = t.dir / "out";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    FILE* f = freopen(out.c_str(), "w", stderr);
    (void)f;
    const std::string cmd = std::string(TIERD_BIN_DIR) + "/tierctl " + args + " --sys-root " +
                            t.dir.string() + " --pid " + std::to_string(::getppid());
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null").c_str(), nullptr);
    _exit(127);
  }
  // Started: the kdamond is on and the ownership record names it (tierctl records the kdamond's
  // pid once the kernel has started it, so the record completes after the state turns on).
  const std::string recorded = "kdamond=0 pid=4242 operations=vaddr target=";
  bool created = false;
  for (int i = 0; i < 6000 && !created; ++i) {
    created = t.attr(kKdamonds + "/nr_kdamonds") == "1" &&
              t.attr(kKdamonds + "/0/state") != "off" &&
              slurp(t.owner()).find(recorded) != std::string::npos;
    if (!created) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE_MESSAGE(created, slurp(out) << "\nrecord: " << slurp(t.owner()));
  int status = 0;
  REQUIRE(waitpid(pid, &status, WNOHANG) == 0);  // still sampling
  REQUIRE(kill(pid, sig) == 0);
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK_MESSAGE(WIFEXITED(status), slurp(out));
  CHECK(t.attr(kKdamonds + "/nr_kdamonds") == "0");
  CHECK_FALSE(fs::exists(t.owner()));
}

TEST_CASE("tierctl record removes its kdamond on SIGINT and SIGTERM") {
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    signalledTierctl("record --source damon-vaddr --seconds 3600 --out /dev/null", sig);
  }
}

TEST_CASE("tierctl hotness removes its kdamond on SIGINT and SIGTERM") {
  char tmpl[] = "/tmp/tierd-damon-truth-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  put(tmpl, "pid 1\n");
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    signalledTierctl(std::string("hotness --source damon --seconds 3600 --truth ") + tmpl, sig);
  }
  fs::remove(tmpl);
}

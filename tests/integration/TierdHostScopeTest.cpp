// The real tierd binary managing live processes of this machine: children of the test selected
// by pid, by command (executable) and by cgroup are taken into scope and sampled; when one exits
// tierd keeps running, counts it gone and drops it, and a fresh process of the same command or
// cgroup is picked up. Processes that look alike but are not selected (the same executable under
// another uid or in another cgroup, other executables whose comm or argv[0] carry the
// workload's name) are never in scope. Everything is read from tierd's log (its scope-change,
// tick and stop lines), polled with a generous bound; nothing is asserted on timing.
//
// The host's own DAMON (kdamond 0 under /sys/kernel/mm/damon/admin) belongs to the machine:
// tierd must leave it alone. nr_kdamonds and every kdamond's state and pid are read before
// tierd starts and after it stopped and must be unchanged; while a kdamond exists that is not
// tierd's, tierd must not choose DAMON.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// Polls `ready` every 10 ms for at most 60 s (noisy shared machines are slow, not wrong).
bool poll(const std::function<bool()>& ready) {
  for (int i = 0; i < 6000; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ready();
}

// A child process of the test, killed and reaped when it goes out of scope.
struct Child {
  pid_t pid = -1;
  fs::path out;  ///< its stdout and stderr
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept : pid(o.pid), out(std::move(o.out)) { o.pid = -1; }
  ~Child() { stop(SIGKILL); }
  /// Signals the child and reaps it; returns its wait status (-1 when there was none).
  int stop(int sig = SIGTERM) {
    if (pid <= 0) return -1;
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return status;
  }
};

// Starts `exe` with `argv` (argv[0] included); `inChild` runs after fork, before exec (it
// returns false to give up: the child exits 126).
Child spawn(const fs::path& exe, const std::vector<std::string>& argv, const fs::path& out,
            const std::function<bool()>& inChild = {}) {
  Child c;
  c.out = out;
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  c.pid = ::fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (inChild && !inChild()) ::_exit(126);
    ::execv(exe.c_str(), args.data());
    ::_exit(127);
  }
  return c;
}

std::string exeOf(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

// A tierd-holdmem (or a copy of it) that keeps taking page faults; returns once it is ready
// (its first line printed: it has exec'd and filled its tables).
Child holdmem(const fs::path& exe, const fs::path& out, const std::function<bool()>& inChild = {}) {
  Child c = spawn(exe,
                  {exe.filename().string(), "--size", "4M", "--extra", "1M", "--refault-extra-ms",
                   "20", "--seconds", "600"},
                  out, inChild);
  const std::string want = "tierd-holdmem pid " + std::to_string(c.pid) + " ";
  CHECK_MESSAGE(poll([&] { return slurp(out).find(want) != std::string::npos; }),
                (exe.string() + " never became ready: " + slurp(out)));
  return c;
}

// nr_kdamonds and each kdamond's state and pid; "" without DAMON sysfs.
std::string damonState() {
  const fs::path kd = "/sys/kernel/mm/damon/admin/kdamonds";
  if (!fs::exists(kd / "nr_kdamonds")) return "";
  const std::string nr = slurp(kd / "nr_kdamonds");
  std::string out = "nr_kdamonds=" + nr;
  int n = 0;
  try {
    n = std::stoi(nr);
  } catch (...) {
  }
  for (int i = 0; i < n; ++i) {
    const fs::path d = kd / std::to_string(i);
    out += " kdamond" + std::to_string(i) + ": state=" + slurp(d / "state") +
           " pid=" + slurp(d / "pid");
  }
  return out;
}

bool damonBusy() {
  const std::string nr = slurp("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds");
  return !nr.empty() && nr != "0\n" && nr != "0";
}

// The real tierd with a config, its log in a file; SIGKILLed if the test ends early.
struct Tierd {
  fs::path log;
  pid_t pid = -1;
  Tierd(const fs::path& dir, const std::string& config) {
    const fs::path path = dir / "tierd.toml";
    log = dir / "tierd.log";
    std::ofstream(path) << config;
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      FILE* f = freopen(log.c_str(), "w", stderr);
      (void)f;
      const std::string bin = std::string(TIERD_BIN_DIR) + "/tierd";
      execl(bin.c_str(), "tierd", "--config", path.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Tierd() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::string text() const { return slurp(log); }
  size_t ticks() const { return count(text(), "tierd: tick "); }
  /// Waits until the log says `needle`; fails the check naming it and showing the log's end.
  bool waitFor(const std::string& needle) const {
    const bool ok = poll([&] { return text().find(needle) != std::string::npos; });
    const std::string t = text();
    CHECK_MESSAGE(ok, ("tierd never logged '" + needle + "' within 60 s; its log ends:\n" +
                       t.substr(t.size() > 4000 ? t.size() - 4000 : 0)));
    return ok;
  }
  /// Waits for `n` more tick lines than now (tierd is still running its loop).
  bool waitTicks(size_t n) const {
    const size_t from = ticks();
    const bool ok = poll([&] { return ticks() >= from + n; });
    CHECK_MESSAGE(ok, ("tierd stopped ticking; its log ends:\n" + text()));
    return ok;
  }
  /// The "after N samples" of the gone line of `pid` in `workload`, -1 when there is none.
  long long samplesWhenGone(const std::string& workload, pid_t p) const {
    const std::string t = text();
    const size_t at = t.find("workload '" + workload + "': pid " + std::to_string(p) + " gone");
    if (at == std::string::npos) return -1;
    const size_t after = t.find(") after ", at);
    if (after == std::string::npos) return -1;
    return std::stoll(t.substr(after + 8));
  }
  int stop() {
    REQUIRE(::kill(pid, SIGTERM) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    return status;
  }
};

std::string inScope(const std::string& workload, pid_t pid) {
  return "workload '" + workload + "': pid " + std::to_string(pid) + " in scope";
}
std::string gone(const std::string& workload, pid_t pid) {
  return "workload '" + workload + "': pid " + std::to_string(pid) + " gone";
}
// Any workload's scope line for `pid` (in scope or gone).
std::string anyScopeLine(pid_t pid) {
  return "': pid " + std::to_string(pid) + " ";
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tierd-host-scope-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    // Other users run the copy of the workload binary in here (the other-uid process).
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string kHoldmem = std::string(TIERD_BIN_DIR) + "/tierd-holdmem";
constexpr uid_t kNobody = 65534;

// The tierd config head shared by the tests: 100 ms ticks, no exporter, auto sampling.
std::string configHead() {
  return "[daemon]\ninterval = \"100ms\"\nprogress_interval = \"0s\"\nmetrics_listen = "
         "\"\"\ncontrol_socket = \"\"\n";
}

// Checks what tierd said about sampling: a source, and not DAMON while a kdamond that is not
// tierd's exists. Returns the source's name.
std::string checkSource(const Tierd& tierd, bool damonWasBusy) {
  REQUIRE(tierd.waitFor("hotness source: "));
  const std::string t = tierd.text();
  const size_t at = t.find("hotness source: ") + 16;
  const std::string source = t.substr(at, t.find(' ', at) - at);
  CHECK_MESSAGE(source != "none", t);
  if (damonWasBusy) CHECK_MESSAGE(source != "damon-vaddr", t);
  return source;
}

}  // namespace

TEST_CASE("tierd manages live processes selected by pid and by command, and only those") {
  if (::geteuid() != 0) TIERD_SKIP("needs root (a process of another uid, tierd's own rights)");
  TempDir dir;
  const std::string damonBefore = damonState();
  const bool damonWasBusy = damonBusy();

  // The command's executable: a copy of tierd-holdmem with a name of this run (a tierd-holdmem
  // another test runs at the same time is not ours), runnable by other users.
  const std::string name = "thm-" + std::to_string(::getpid());
  const fs::path copy = dir.path / name;
  fs::copy_file(kHoldmem, copy);
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);

  Child byPid = holdmem(kHoldmem, dir.path / "by-pid.out");
  Child cmd1 = holdmem(copy, dir.path / "cmd1.out");
  // The same executable under another uid: the workload says uid = 0.
  Child otherUid = holdmem(copy, dir.path / "other-uid.out", [] {
    return ::setgroups(0, nullptr) == 0 && ::setresgid(kNobody, kNobody, kNobody) == 0 &&
           ::setresuid(kNobody, kNobody, kNobody) == 0;
  });
  // Other executables carrying the workload's name: one sets its comm (prctl PR_SET_NAME; only
  // a process itself may), one was started with it as argv[0] (exec -a).
  Child spoofComm;
  spoofComm.pid = ::fork();
  REQUIRE(spoofComm.pid >= 0);
  if (spoofComm.pid == 0) {
    ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    for (;;)
      ::pause();
  }
  REQUIRE(poll(
      [&] { return slurp("/proc/" + std::to_string(spoofComm.pid) + "/comm") == name + "\n"; }));
  const fs::path sleepBin = fs::exists("/usr/bin/sleep") ? "/usr/bin/sleep" : "/bin/sleep";
  REQUIRE(fs::exists(sleepBin));
  Child spoofArgv = spawn(sleepBin, {name, "600"}, dir.path / "spoof.out");
  REQUIRE(poll([&] { return fs::path(exeOf(spoofArgv.pid)).filename() == "sleep"; }));
  REQUIRE(slurp("/proc/" + std::to_string(spoofArgv.pid) + "/cmdline").rfind(name + '\0', 0) == 0);

  Tierd tierd(dir.path, configHead() + "[[workload]]\nname = \"by-pid\"\npids = [" +
                            std::to_string(byPid.pid) +
                            "]\n[[workload]]\nname = \"by-command\"\ncommand = \"" + name +
                            "\"\nuid = 0\n");
  const std::string source = checkSource(tierd, damonWasBusy);

  // Both selected processes are taken in and sampled.
  CHECK(tierd.waitFor(inScope("by-pid", byPid.pid) + " (start time "));
  CHECK(tierd.waitFor(inScope("by-command", cmd1.pid) + " (start time "));
  CHECK(tierd.waitFor("by-pid pids=1 "));
  CHECK(tierd.waitFor("by-command pids=1 "));
  CHECK(tierd.waitTicks(3));  // samples of a few ticks

  // The command's process exits: counted gone, dropped; tierd keeps running.
  const pid_t cmd1Pid = cmd1.pid;
  const int st1 = cmd1.stop();
  CHECK(WIFEXITED(st1));
  CHECK(tierd.waitFor(gone("by-command", cmd1Pid) + " (exited or no longer selected) after "));
  CHECK(tierd.waitFor(" samples; its heat and plans dropped (1 gone so far)"));
  const long long cmd1Samples = tierd.samplesWhenGone("by-command", cmd1Pid);
  if (source == "perf-sw-page-faults")
    CHECK_MESSAGE(cmd1Samples > 0, ("no page fault of pid " + std::to_string(cmd1Pid) +
                                    " was sampled: " + tierd.text()));
  CHECK(tierd.waitFor("by-command pids=0 "));
  CHECK(tierd.waitTicks(2));

  // A fresh process of the same command is picked up.
  Child cmd2 = holdmem(copy, dir.path / "cmd2.out");
  CHECK(tierd.waitFor(inScope("by-command", cmd2.pid) + " (start time "));

  // The pid's process exits: gone, and its workload is empty from then on.
  const pid_t byPidPid = byPid.pid;
  byPid.stop();
  CHECK(tierd.waitFor(gone("by-pid", byPidPid) + " (exited or no longer selected) after "));
  CHECK(tierd.waitFor(" samples; its heat and plans dropped (2 gone so far)"));
  if (source == "perf-sw-page-faults") CHECK(tierd.samplesWhenGone("by-pid", byPidPid) > 0);
  CHECK(tierd.waitFor("workload 'by-pid': selector matches no process"));
  CHECK(tierd.waitTicks(3));
  {
    const std::string t = tierd.text();
    const size_t goneAt = t.find(gone("by-pid", byPidPid));
    REQUIRE(goneAt != std::string::npos);
    CHECK(t.find("by-pid pids=0 ", goneAt) != std::string::npos);
    CHECK(t.find("by-pid pids=1 ", t.find("tierd: tick ", goneAt)) == std::string::npos);
  }

  // Never in scope, in any tick: the same executable under another uid, the spoofed comm.
  {
    const std::string t = tierd.text();
    CHECK_MESSAGE(count(t, anyScopeLine(otherUid.pid)) == 0, t);
    CHECK_MESSAGE(count(t, anyScopeLine(spoofComm.pid)) == 0, t);
    CHECK_MESSAGE(count(t, anyScopeLine(spoofArgv.pid)) == 0, t);
    CHECK(count(t, "': pid ") == 5);  // 3 in scope, 2 gone: nothing else
  }
  const int status = tierd.stop();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(tierd.text().find("tierd: stopped after") != std::string::npos);
  CHECK(damonState() == damonBefore);
  CHECK(WEXITSTATUS(cmd2.stop()) == 0);  // its memory intact
  CHECK(WIFEXITED(otherUid.stop()));
}

TEST_CASE("tierd manages the processes of a live cgroup v2, and no process outside it") {
  if (::geteuid() != 0) TIERD_SKIP("needs root (creates cgroups)");
  // The cgroup v2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system).
  fs::path mount;
  {
    std::istringstream in(slurp("/proc/self/mountinfo"));
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::vector<std::string> w;
      for (std::string x; f >> x;)
        w.push_back(x);
      for (size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] == "-" && w[i + 1] == "cgroup2" && w.size() > 4 && w[3] == "/") mount = w[4];
      if (!mount.empty()) break;
    }
  }
  if (mount.empty()) TIERD_SKIP("no cgroup v2 hierarchy mounted at its root");
  const std::string cg = "tierd-itest-" + std::to_string(::getpid());
  const fs::path inside = mount / cg, outside = mount / (cg + "-other");
  if (::mkdir(inside.c_str(), 0755) != 0) TIERD_SKIP("cannot create " + inside.string());
  struct Cleanup {
    std::vector<fs::path> dirs;
    ~Cleanup() {
      for (const fs::path& d : dirs)
        ::rmdir(d.c_str());
    }
  } cleanup{{inside}};
  REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
  cleanup.dirs.push_back(outside);
  auto into = [](const fs::path& cgroup) {
    return [procs = (cgroup / "cgroup.procs").string()] {
      const int fd = ::open(procs.c_str(), O_WRONLY);
      const bool ok = fd >= 0 && ::write(fd, "0", 1) == 1;
      if (fd >= 0) ::close(fd);
      return ok;
    };
  };
  TempDir dir;
  const std::string damonBefore = damonState();
  const bool damonWasBusy = damonBusy();

  Child in1 = holdmem(kHoldmem, dir.path / "in1.out", into(inside));
  Child out1 = holdmem(kHoldmem, dir.path / "out1.out", into(outside));  // same exe, other cgroup
  Child uncgrouped = holdmem(kHoldmem, dir.path / "plain.out");          // same exe, test's cgroup
  CHECK(slurp(inside / "cgroup.procs") == std::to_string(in1.pid) + "\n");

  Tierd tierd(dir.path,
              configHead() + "[[workload]]\nname = \"by-cgroup\"\ncgroup = \"/" + cg + "\"\n");
  const std::string source = checkSource(tierd, damonWasBusy);
  CHECK(tierd.waitFor(inScope("by-cgroup", in1.pid) + " (start time "));
  CHECK(tierd.waitTicks(3));

  const pid_t in1Pid = in1.pid;
  in1.stop();
  CHECK(tierd.waitFor(gone("by-cgroup", in1Pid) + " (exited or no longer selected) after "));
  CHECK(tierd.waitFor(" samples; its heat and plans dropped (1 gone so far)"));
  if (source == "perf-sw-page-faults") CHECK(tierd.samplesWhenGone("by-cgroup", in1Pid) > 0);
  CHECK(tierd.waitFor("workload 'by-cgroup': selector matches no process (1 cgroups read"));

  // A new process in the cgroup is picked up.
  Child in2 = holdmem(kHoldmem, dir.path / "in2.out", into(inside));
  CHECK(tierd.waitFor(inScope("by-cgroup", in2.pid) + " (start time "));
  CHECK(tierd.waitTicks(3));
  {
    const std::string t = tierd.text();
    CHECK_MESSAGE(count(t, anyScopeLine(out1.pid)) == 0, t);
    CHECK_MESSAGE(count(t, anyScopeLine(uncgrouped.pid)) == 0, t);
    CHECK(count(t, "': pid ") == 3);  // 2 in scope, 1 gone
  }
  const int status = tierd.stop();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(damonState() == damonBefore);
  CHECK(WEXITSTATUS(in2.stop()) == 0);
  out1.stop();
  uncgrouped.stop();
}

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tierd/scope/ProcessIdentity.h"
#include "tierd/scope/Scope.h"
#include "tierd/sys/Parsers.h"

using namespace tierd;
using namespace tierd::scope;
namespace fs = std::filesystem;

namespace {

// mountinfo of this build machine (cgroup v1 controllers plus cgroup2 at /sys/fs/cgroup/unified).
const char* kMountinfo =
    "23 1 0:21 / / rw,relatime - overlay overlay rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:9 - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";

struct Tree {
  fs::path dir;
  Tree() {
    char tmpl[] = "/tmp/scope-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
  }
  ~Tree() { fs::remove_all(dir); }
  void put(const std::string& abs, const std::string& text) const {
    fs::create_directories(fs::path(dir.string() + abs).parent_path());
    std::ofstream(dir.string() + abs, std::ios::binary) << text;
  }
  // A process: comm, cmdline, /proc/PID/stat with `start` as field 22, and /proc/PID/exe a
  // symlink to `exe` (none for kernel threads, as in the kernel). Real uid `uid`.
  void process(int pid, const std::string& comm, const std::string& cmdline,
               const std::string& exe = "", uint64_t start = 1000, int uid = 0) const {
    const std::string d = "/proc/" + std::to_string(pid);
    put(d + "/comm", comm + "\n");
    put(d + "/cmdline", cmdline);
    put(d + "/stat", std::to_string(pid) + " (" + comm +
                         ") S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 " +
                         std::to_string(start) + " 1000000 100 18446744073709551615\n");
    put(d + "/status", "Name:\t" + comm + "\nUid:\t" + std::to_string(uid) + "\t" +
                           std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
                           std::to_string(uid) + "\n");
    if (!exe.empty()) {
      fs::remove(dir.string() + d + "/exe");
      fs::create_symlink(exe, dir.string() + d + "/exe");
    }
  }
  void link(const std::string& abs, const std::string& target) const {
    fs::create_directories(fs::path(dir.string() + abs).parent_path());
    fs::create_symlink(target, dir.string() + abs);
  }
};

// A `command = "tierd-gups"` selector over `t`, which it gives a mountinfo, the executable
// /usr/bin/tierd-gups and pid 100 running it; pass() resolves the selector once (one scan).
struct GupsScan {
  explicit GupsScan(const Tree& t) : provider(sys::SysRoot(t.dir.string()), 1) {
    t.put("/proc/self/mountinfo", kMountinfo);
    t.put("/usr/bin/tierd-gups", "ELF");
    t.process(100, "tierd-gups", std::string("tierd-gups\0", 11), "/usr/bin/tierd-gups");
    REQUIRE(provider.refreshMounts().ok());
  }
  std::vector<pid_t> pass() {
    auto s = provider.resolve(selector);
    REQUIRE(s.ok());
    return s->pids;
  }
  SysRootScopeProvider provider;
  const WorkloadSelector selector{"gups", std::nullopt, {}, std::string("tierd-gups")};
};

}  // namespace

TEST_CASE("parseCgroupMounts finds v1 controllers and the v2 hierarchy") {
  auto m = parseCgroupMounts(kMountinfo, "mountinfo");
  REQUIRE(m.ok());
  REQUIRE(m->size() == 5);
  CHECK(m->at(1).mountPoint == "/sys/fs/cgroup/memory");
  CHECK(m->at(1).version == 1);
  CHECK(m->at(1).controllers == std::vector<std::string>{"memory"});
  CHECK(m->at(3).controllers == std::vector<std::string>{"name=systemd"});
  CHECK(m->at(4).version == 2);
  auto bad = parseCgroupMounts("31 23 0:28 / /sys/fs/cgroup\n", "/proc/self/mountinfo");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().context == "/proc/self/mountinfo:1");
}

TEST_CASE("parseNumaStatAnon reads v2 bytes and v1 pages") {
  auto v2 = parseNumaStatAnon("anon N0=8192 N1=4096\nfile N0=0 N1=0\n", 2, 4096, "f");
  REQUIRE(v2.ok());
  CHECK(v2->at(0) == 8192);
  CHECK(v2->at(1) == 4096);
  auto v1 =
      parseNumaStatAnon("total=5133 N0=5133\nfile=686 N0=686\nanon=374 N0=374\n", 1, 4096, "f");
  REQUIRE(v1.ok());
  CHECK(v1->at(0) == 374u * 4096);
  CHECK_FALSE(parseNumaStatAnon("anon N0=x\n", 2, 4096, "f").ok());
  CHECK_FALSE(parseNumaStatAnon("file N0=1\n", 2, 4096, "f").ok());
}

TEST_CASE("parseNumaStatLine reads anon and file, v1 prefers the hierarchical line") {
  auto v2 = parseNumaStatLine("anon N0=8192 N1=4096\nfile N0=12288 N1=0\n", "file", 2, 4096, "f");
  REQUIRE(v2.ok());
  CHECK(v2->at(0) == 12288);
  CHECK(v2->at(1) == 0);
  const char* v1 =
      "total=20 N0=20\nfile=6 N0=6\nanon=4 N0=4\nhierarchical_total=50 N0=30 N1=20\n"
      "hierarchical_file=16 N0=16\nhierarchical_anon=34 N0=14 N1=20\n";
  auto anon = parseNumaStatLine(v1, "anon", 1, 4096, "f");
  REQUIRE(anon.ok());
  CHECK(anon->at(0) == 14u * 4096);
  CHECK(anon->at(1) == 20u * 4096);
  auto file = parseNumaStatLine("file=6 N0=6\n", "file", 1, 4096, "f");
  REQUIRE(file.ok());
  CHECK(file->at(0) == 6u * 4096);
  CHECK_FALSE(parseNumaStatLine("anon N0=1\n", "file", 2, 4096, "f").ok());
}

TEST_CASE("ScopeProvider resolves cgroup, pid-list and command selectors") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  t.put("/sys/fs/cgroup/memory/redis/cgroup.procs", "100\n101\n");
  t.put("/sys/fs/cgroup/memory/redis/memory.numa_stat",
        "total=10 N0=10\nfile=3 N0=3\nanon=6 N0=4 N1=2\n");
  t.put("/sys/fs/cgroup/unified/batch.slice/cgroup.procs", "200\n42\n");
  t.process(100, "redis-server", std::string("/usr/bin/redis-server\0*:6379\0", 29),
            "/usr/bin/redis-check-rdb");
  t.process(101, "redis-server", std::string("/usr/bin/redis-server\0", 22),
            "/usr/bin/redis-check-rdb");
  t.process(42, "tierd", std::string("tierd\0", 6), "/usr/sbin/tierd");
  t.process(200, "batch", std::string("batch\0", 6), "/usr/bin/batch");
  t.process(300, "kworker/0:1", "");  // kernel thread: empty cmdline, no exe
  t.process(301, "tierd-gups", std::string("./build/bin/tierd-gups\0--size\0", 30),
            "/home/u/tierd/build/bin/tierd-gups");

  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 42);
  REQUIRE(p.refreshMounts().ok());

  WorkloadSelector byCgroup{"redis", std::string("/redis"), {}, std::nullopt};
  auto redis = p.resolve(byCgroup);
  REQUIRE(redis.ok());
  CHECK(redis->pids == std::vector<pid_t>{100, 101});
  CHECK(redis->cgroupInode.has_value());
  CHECK(redis->anonBytesPerNode.at(1) == 2u * 4096);
  CHECK(redis->fileBytesPerNode.at(0) == 3u * 4096);

  // v2 is preferred; tierd's own pid is never in a scope.
  auto batch = p.resolve({"batch", std::string("batch.slice"), {}, std::nullopt});
  REQUIRE(batch.ok());
  CHECK(batch->pids == std::vector<pid_t>{200});

  auto missing = p.resolve({"gone", std::string("/nope"), {}, std::nullopt});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
  CHECK(missing.error().describe().find("workload 'gone'") != std::string::npos);
  CHECK(missing.error().describe().find("/sys/fs/cgroup/unified/nope") != std::string::npos);

  auto byPid = p.resolve({"pids", std::nullopt, {101, 999}, std::nullopt});
  REQUIRE(byPid.ok());
  CHECK(byPid->pids == std::vector<pid_t>{101});
  CHECK(byPid->vanishedPids == 1);

  auto byComm = p.resolve({"gups", std::nullopt, {}, std::string("tierd-gups")});
  REQUIRE(byComm.ok());
  CHECK(byComm->pids == std::vector<pid_t>{301});
  auto kthread = p.resolve({"k", std::nullopt, {}, std::string("kworker/0:1")});
  REQUIRE(kthread.ok());
  CHECK(kthread->pids.empty());
}

TEST_CASE("ScopeProvider on the live system finds a child by command name and pid") {
  SysRootScopeProvider p(sys::SysRoot::live(), getpid());
  REQUIRE(p.refreshMounts().ok());
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    execlp("sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  // Wait until exec has replaced the forked image (comm becomes "sleep").
  for (int i = 0; i < 2000; ++i) {
    std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c == "sleep") break;
    usleep(1000);
  }
  auto byComm = p.resolve({"sleepers", std::nullopt, {}, std::string("sleep")});
  REQUIRE(byComm.ok());
  CHECK(std::find(byComm->pids.begin(), byComm->pids.end(), child) != byComm->pids.end());
  // By path, compared as files: the path as exec'ed, and through a symlinked directory.
  const std::string real = fs::canonical("/proc/" + std::to_string(child) + "/exe").string();
  auto byPath = p.resolve({"sleepers", std::nullopt, {}, real});
  REQUIRE(byPath.ok());
  CHECK(std::find(byPath->pids.begin(), byPath->pids.end(), child) != byPath->pids.end());
  if (fs::is_symlink("/bin") && fs::exists("/bin/sleep")) {  // merged /usr (Debian 12)
    auto viaLink = p.resolve({"sleepers", std::nullopt, {}, std::string("/bin/sleep")});
    REQUIRE(viaLink.ok());
    CHECK(std::find(viaLink->pids.begin(), viaLink->pids.end(), child) != viaLink->pids.end());
  }
  auto other = p.resolve({"sleepers", std::nullopt, {}, std::string("/usr/bin/true")});
  REQUIRE(other.ok());
  CHECK(std::find(other->pids.begin(), other->pids.end(), child) == other->pids.end());
  auto byPid = p.resolve({"one", std::nullopt, {child, getpid()}, std::nullopt});
  REQUIRE(byPid.ok());
  CHECK(byPid->pids == std::vector<pid_t>{child});  // own pid excluded
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  auto after = p.resolve({"one", std::nullopt, {child}, std::nullopt});
  REQUIRE(after.ok());
  CHECK(after->pids.empty());
  CHECK(after->vanishedPids == 1);
}

TEST_CASE("a multi-call binary's applet symlinks select only processes exec'ed by that name") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  t.put("/bin/busybox", "ELF");
  for (const char* applet : {"sh", "sleep", "bc"})
    t.link(std::string("/bin/") + applet, "busybox");
  t.process(200, "sh", std::string("/bin/sh\0-c\0true\0", 16), "/bin/busybox");
  t.process(201, "sleep",
            std::string("sleep\0"
                        "5\0",
                        8),
            "/bin/busybox");
  t.process(202, "bc", std::string("bc\0-q\0", 6), "/bin/busybox");
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());
  auto bc = p.resolve({"calc", std::nullopt, {}, std::string("bc")});
  REQUIRE(bc.ok());
  CHECK(bc->pids == std::vector<pid_t>{202});
  auto sh = p.resolve({"shell", std::nullopt, {}, std::string("sh")});
  REQUIRE(sh.ok());
  CHECK(sh->pids == std::vector<pid_t>{200});
  // A process that rewrote its cmdline (redis: "redis-server *:6379", one string) still goes by
  // its comm and its argv[0]'s first word.
  t.link("/usr/bin/redis-server", "redis-check-rdb");
  t.put("/usr/bin/redis-check-rdb", "ELF");
  t.process(300, "redis-server", std::string("redis-server *:6379\0", 20),
            "/usr/bin/redis-check-rdb");
  t.process(301, "redis-rdb-bgsa", std::string("/usr/bin/redis-server *:6379", 28),
            "/usr/bin/redis-check-rdb");
  auto redis = p.resolve({"redis", std::nullopt, {}, std::string("redis-server")});
  REQUIRE(redis.ok());
  CHECK(redis->pids == std::vector<pid_t>{300, 301});
}

TEST_CASE("a process that names itself like the workload is not selected: exe decides") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  // The real one, and an impostor that set comm (prctl) and argv[0] to "redis-server".
  t.process(100, "redis-server", std::string("/usr/bin/redis-server\0", 22),
            "/usr/bin/redis-check-rdb");
  t.process(666, "redis-server", std::string("/usr/bin/redis-server\0", 22), "/tmp/x/evil", 1000,
            1000);
  t.link("/usr/bin/redis-server", "redis-check-rdb");  // Debian's layout
  t.put("/usr/bin/redis-check-rdb", "ELF");
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());

  auto byName = p.resolve({"redis", std::nullopt, {}, std::string("redis-server")});
  REQUIRE(byName.ok());
  CHECK(byName->pids == std::vector<pid_t>{100});
  auto byPath = p.resolve({"redis", std::nullopt, {}, std::string("/usr/bin/redis-server")});
  REQUIRE(byPath.ok());
  CHECK(byPath->pids == std::vector<pid_t>{100});
  CHECK(byPath->startTimes.at(100) == 1000u);

  // A copy of the binary under the same file name matches a bare name, never a path; uid
  // narrows a bare name to one user's processes.
  t.process(667, "x", std::string("x\0", 2), "/home/mallory/redis-server", 1000, 1000);
  auto copy = p.resolve({"redis", std::nullopt, {}, std::string("redis-server")});
  REQUIRE(copy.ok());
  CHECK(copy->pids == std::vector<pid_t>{100, 667});
  WorkloadSelector rootOnly{"redis", std::nullopt, {}, std::string("redis-server"), 0u};
  auto owned = p.resolve(rootOnly);
  REQUIRE(owned.ok());
  CHECK(owned->pids == std::vector<pid_t>{100});
  auto exact = p.resolve({"redis", std::nullopt, {}, std::string("/usr/bin/redis-server")});
  REQUIRE(exact.ok());
  CHECK(exact->pids == std::vector<pid_t>{100});
}

TEST_CASE("a cgroup v2 parent (a pod or a slice) selects the processes of its descendants") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  const std::string pod = "/sys/fs/cgroup/unified/kubepods.slice/pod1";
  t.put(pod + "/cgroup.procs", "");  // v2: an inner node holds no process
  t.put(pod + "/cgroup.controllers", "memory\n");
  t.put(pod + "/app/cgroup.procs", "500\n501\n");
  t.put(pod + "/sidecar/cgroup.procs", "510\n");
  t.put(pod + "/sidecar/deeper/cgroup.procs", "520\n");
  for (int pid : {500, 501, 510, 520})
    t.process(pid, "w", std::string("w\0", 2), "/usr/bin/w");
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());
  auto s = p.resolve({"pod", std::string("/kubepods.slice/pod1"), {}, std::nullopt});
  REQUIRE(s.ok());
  CHECK(s->pids == std::vector<pid_t>{500, 501, 510, 520});
  CHECK(s->cgroupsWalked == 4);
}

TEST_CASE("a pid-list entry stays pinned to its process: a new holder of the pid is not selected") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  t.process(700, "db", std::string("db\0", 3), "/usr/bin/db", 5000);
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());
  auto first = p.resolve({"db", std::nullopt, {700}, std::nullopt});
  REQUIRE(first.ok());
  CHECK(first->pids == std::vector<pid_t>{700});
  // The process exits and pid 700 is handed to another process (a later start time).
  t.process(700, "other", std::string("other\0", 6), "/usr/bin/other", 9000);
  auto after = p.resolve({"db", std::nullopt, {700}, std::nullopt});
  REQUIRE(after.ok());
  CHECK(after->pids.empty());
  CHECK(after->vanishedPids == 1);
}

TEST_CASE("a cgroup branch deeper than the limit is skipped and said while the workload stays") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  const std::string top = "/sys/fs/cgroup/unified/deep.slice";
  t.put(top + "/cgroup.procs", "");
  t.put(top + "/app/cgroup.procs", "800\n");
  std::string dir = top;
  for (int level = 1; level <= kMaxCgroupDepth + 1; ++level) {
    dir += "/d";
    t.put(dir + "/cgroup.procs", level == kMaxCgroupDepth       ? "802\n"
                                 : level == kMaxCgroupDepth + 1 ? "801\n"
                                                                : "");
  }
  t.put(dir + "/d/cgroup.procs", "803\n");  // below the skipped one: not read either
  for (int pid : {800, 801, 802, 803})
    t.process(pid, "w", std::string("w\0", 2), "/usr/bin/w");
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());
  auto s = p.resolve({"deep", std::string("/deep.slice"), {}, std::nullopt});
  REQUIRE_MESSAGE(s.ok(), s.error().describe());
  CHECK(s->pids == std::vector<pid_t>{800, 802});
  CHECK(s->cgroupsWalked == 2 + static_cast<size_t>(kMaxCgroupDepth));
  REQUIRE(s->skippedCgroups.size() == 1);
  CHECK(s->skippedCgroups[0] == t.dir.string() + dir);
  REQUIRE(s->problems.size() == 1);
  CHECK(s->problems[0].find("workload 'deep': 1 cgroup(s) more than 64 levels below ") == 0);
  // A tree within the limit says nothing.
  auto app = p.resolve({"app", std::string("/deep.slice/app"), {}, std::nullopt});
  REQUIRE(app.ok());
  CHECK(app->skippedCgroups.empty());
  CHECK(app->problems.empty());
}

TEST_CASE("pid-list pins kept in a file hold across a restart within one boot") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  t.put("/proc/sys/kernel/random/boot_id", "b1\n");
  t.process(700, "db", std::string("db\0", 3), "/usr/bin/db", 5000);
  t.process(710, "db", std::string("db\0", 3), "/usr/bin/db", 5100);
  fs::create_directories(t.dir / "run");  // tierd creates /run/tierd, not /run
  const std::string file = t.dir.string() + "/run/tierd/pids.pinned";
  const WorkloadSelector db{"db", std::nullopt, {700, 710}, std::nullopt};
  auto contents = [&] {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  {
    SysRootScopeProvider first(sys::SysRoot(t.dir.string()), 1);
    REQUIRE(first.keepPins(file, "/etc/tierd/tierd.toml").ok());  // no file yet: nothing to read
    auto s = first.resolve(db);
    REQUIRE(s.ok());
    CHECK(s->pids == std::vector<pid_t>{700, 710});
    CHECK(s->problems.empty());
  }
  CHECK(contents() == "boot_id=b1\nowner=/etc/tierd/tierd.toml\ndb 700 5000\ndb 710 5100\n");
  // tierd is down; process 700 exits and its pid goes to another process.
  t.process(700, "other", std::string("other\0", 6), "/usr/bin/other", 9000);
  SysRootScopeProvider restarted(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(restarted.keepPins(file, "/etc/tierd/tierd.toml").ok());
  auto s = restarted.resolve(db);
  REQUIRE(s.ok());
  CHECK(s->pids == std::vector<pid_t>{710});
  CHECK(s->vanishedPids == 1);
  // An entry that leaves the list loses its pin.
  auto fewer = restarted.resolve({"db", std::nullopt, {710}, std::nullopt});
  REQUIRE(fewer.ok());
  CHECK(contents() == "boot_id=b1\nowner=/etc/tierd/tierd.toml\ndb 710 5100\n");

  // Pins of another boot mean nothing (start times count from boot): not used.
  t.put("/proc/sys/kernel/random/boot_id", "b2\n");
  SysRootScopeProvider rebooted(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(rebooted.keepPins(file, "/etc/tierd/tierd.toml").ok());
  auto again = rebooted.resolve(db);
  REQUIRE(again.ok());
  CHECK(again->pids == std::vector<pid_t>{700, 710});
  CHECK(contents() == "boot_id=b2\nowner=/etc/tierd/tierd.toml\ndb 700 9000\ndb 710 5100\n");

  // Pins of another config (another tierd, a test's) name other processes: not used.
  t.process(700, "db", std::string("db\0", 3), "/usr/bin/db", 9500);
  SysRootScopeProvider other(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(other.keepPins(file, "/tmp/other.toml").ok());
  auto mine = other.resolve(db);
  REQUIRE(mine.ok());
  CHECK(mine->pids == std::vector<pid_t>{700, 710});

  // A malformed file is an error naming its line; its pins are not used.
  t.put("/run/tierd/pids.pinned", "boot_id=b2\nowner=/etc/tierd/tierd.toml\ndb 700\n");
  SysRootScopeProvider broken(sys::SysRoot(t.dir.string()), 1);
  auto st = broken.keepPins(file, "/etc/tierd/tierd.toml");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().context == file + ":3");
}

TEST_CASE("a pin that cannot be recorded is said and the pid is still selected") {
  Tree t;
  t.put("/proc/sys/kernel/random/boot_id", "b1\n");
  t.process(700, "db", std::string("db\0", 3), "/usr/bin/db", 5000);
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.keepPins(t.dir.string() + "/run/tierd/pids.pinned", "c").ok());
  t.put("/run/tierd", "");  // a file where the folder should be: nothing can be written in it
  auto s = p.resolve({"db", std::nullopt, {700}, std::nullopt});
  REQUIRE(s.ok());
  CHECK(s->pids == std::vector<pid_t>{700});
  REQUIRE(s->problems.size() == 1);
  CHECK(s->problems[0].find("workload 'db': pins not recorded") == 0);
}

TEST_CASE("a command selector gives the executable each process matched with") {
  Tree t;
  GupsScan scan(t);
  auto s = scan.provider.resolve(scan.selector);
  REQUIRE(s.ok());
  CHECK(s->pids == std::vector<pid_t>{100});
  REQUIRE(s->executables.count(100) == 1);
  CHECK(s->executables.at(100).link == "/usr/bin/tierd-gups");
}

TEST_CASE(
    "ProcessHandle under a fixture root: an exec into another file is not the same executable") {
  Tree t;
  t.process(100, "gups", std::string("gups\0", 5), "/usr/bin/tierd-gups", 4000);
  const sys::SysRoot root(t.dir.string());
  auto h = ProcessHandle::open(root, 100);
  REQUIRE(h.ok());
  REQUIRE(h->executable().has_value());
  CHECK(h->sameExecutable(root));
  t.process(100, "other", std::string("other\0", 6), "/usr/bin/other", 4000);  // execve(2)
  CHECK(h->stillSame(root));  // pid and start time survive an exec
  CHECK_FALSE(h->sameExecutable(root));
  // A process without an executable (a kernel thread) is never vouched for.
  t.process(2, "kthreadd", "");
  auto k = ProcessHandle::open(root, 2);
  REQUIRE(k.ok());
  CHECK_FALSE(k->executable().has_value());
  CHECK_FALSE(k->sameExecutable(root));
}

TEST_CASE(
    "ProcessHandle on the live system: an exec keeps pid and start time and pidfd but not the "
    "exe") {
  int go[2];
  int execd[2];
  REQUIRE(pipe(go) == 0);
  REQUIRE(pipe2(execd, O_CLOEXEC) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(go[1]);
    close(execd[0]);
    char c = 0;
    if (read(go[0], &c, 1) != 1) _exit(1);
    execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(go[0]);
  close(execd[1]);
  const sys::SysRoot live = sys::SysRoot::live();
  auto h = ProcessHandle::open(live, child);
  REQUIRE_MESSAGE(h.ok(), h.error().describe());
  CHECK(h->sameExecutable(live));
  REQUIRE(write(go[1], "x", 1) == 1);
  char c = 0;
  CHECK(read(execd[0], &c, 1) == 0);  // end of file: the exec closed the O_CLOEXEC end
  CHECK(h->stillSame(live));
  CHECK_FALSE(h->sameExecutable(live));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(go[1]);
  close(execd[0]);
}

TEST_CASE("parseStatStartTime reads field 22 after a comm holding spaces and parentheses") {
  auto v = sys::parseStatStartTime(
      "42 (a) b (c) S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 123456 1000 100 1\n", "t");
  REQUIRE(v.ok());
  CHECK(v.value() == 123456u);
  CHECK_FALSE(sys::parseStatStartTime("42 (a) S 1 1", "t").ok());
  CHECK_FALSE(sys::parseStatStartTime("42 a S 1 1", "t").ok());
}

TEST_CASE("ProcessHandle on the live system: a pidfd that tells an exited process apart") {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto h = ProcessHandle::open(sys::SysRoot::live(), child);
  REQUIRE_MESSAGE(h.ok(), h.error().describe());
  CHECK(h->startTime() > 0);
  CHECK(h->stillSame(sys::SysRoot::live()));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK_FALSE(h->stillSame(sys::SysRoot::live()));
  auto self = ProcessHandle::open(sys::SysRoot::live(), getpid());
  REQUIRE(self.ok());
  CHECK(self->stillSame(sys::SysRoot::live()));
}

TEST_CASE(
    "a descendant cgroup that cannot be read (removed, threaded) does not drop the workload") {
  Tree t;
  t.put("/proc/self/mountinfo", kMountinfo);
  const std::string slice = "/sys/fs/cgroup/unified/batch.slice";
  t.put(slice + "/cgroup.procs", "");
  t.put(slice + "/a/cgroup.procs", "600\n");
  t.put(slice + "/threaded/cgroup.procs", "not a pid list\n");  // what EOPNOTSUPP stands for here
  t.process(600, "w", std::string("w\0", 2), "/usr/bin/w");
  SysRootScopeProvider p(sys::SysRoot(t.dir.string()), 1);
  REQUIRE(p.refreshMounts().ok());
  auto s = p.resolve({"batch", std::string("/batch.slice"), {}, std::nullopt});
  REQUIRE_MESSAGE(s.ok(), s.error().describe());
  CHECK(s->pids == std::vector<pid_t>{600});
}

TEST_CASE(
    "a command scan checks a process that did not match again when its comm changes (execve), "
    "a process that matched on every pass, and every process every tenth pass") {
  Tree t;
  GupsScan scan(t);
  t.put("/bin/sh", "ELF");
  t.process(200, "sh", std::string("sh\0", 3), "/bin/sh");  // forked, not exec'ed yet
  t.process(300, "sh", std::string("sh\0", 3), "/bin/sh");
  auto pass = [&] { return scan.pass(); };
  CHECK(pass() == std::vector<pid_t>{100});  // pass 1 checks every process
  // 200 execs tierd-gups: execve sets its exe and its comm; seen on the next pass.
  t.process(200, "tierd-gups", std::string("tierd-gups\0", 11), "/usr/bin/tierd-gups");
  CHECK(pass() == std::vector<pid_t>{100, 200});
  // 100 execs another program: a process that matched is checked on every pass.
  t.process(100, "sh", std::string("sh\0", 3), "/bin/sh");
  CHECK(pass() == std::vector<pid_t>{200});
  // 300's pid is taken by a tierd-gups that kept the comm "sh" (prctl PR_SET_NAME): its comm
  // did not change, so it is adopted at the tenth pass, never selected wrongly before it.
  t.process(300, "sh", std::string("sh\0", 3), "/usr/bin/tierd-gups");
  for (int i = 4; i <= 10; ++i)
    CHECK(pass() == std::vector<pid_t>{200});
  CHECK(pass() == std::vector<pid_t>{200, 300});  // pass 11: every process again
}

TEST_CASE(
    "a command scan skips a process without an executable (kernel thread) until the rescan, "
    "comm changes included, so a reused kernel-thread pid is adopted at the tenth pass") {
  Tree t;
  GupsScan scan(t);
  t.process(300, "kworker/0:1", "");  // no exe link, as the kernel shows a kernel thread
  auto pass = [&] { return scan.pass(); };
  CHECK(pass() == std::vector<pid_t>{100});  // pass 1 checks every process
  // The kworker exits and a tierd-gups gets its pid: a new comm, but a process without an
  // executable is not looked at again before the rescan (a user process with a changed comm
  // would be, as the test above shows).
  t.process(300, "tierd-gups", std::string("tierd-gups\0", 11), "/usr/bin/tierd-gups");
  for (int i = 2; i <= 10; ++i)
    CHECK(pass() == std::vector<pid_t>{100});
  CHECK(pass() == std::vector<pid_t>{100, 300});  // pass 11: every process again
  // A process that matched is checked on every pass, wherever it came from.
  t.process(300, "sh", std::string("sh\0", 3), "/usr/bin/sh");
  CHECK(pass() == std::vector<pid_t>{100});
}

TEST_CASE("the command selectors of one scope pass share one /proc listing and comm read") {
  Tree t;
  GupsScan scan(t);
  t.put("/usr/bin/bc", "ELF");
  const WorkloadSelector bc{"bc", std::nullopt, {}, std::string("bc")};
  auto pids = [&](const WorkloadSelector& sel) {
    auto s = scan.provider.resolve(sel);
    REQUIRE(s.ok());
    return s->pids;
  };
  scan.provider.beginPass();
  CHECK(pids(scan.selector) == std::vector<pid_t>{100});
  // A bc starts between the two resolves of the pass: the pass's listing does not hold it yet.
  t.process(200, "bc", std::string("bc\0", 3), "/usr/bin/bc");
  CHECK(pids(bc).empty());
  scan.provider.beginPass();  // the next tick
  CHECK(pids(bc) == std::vector<pid_t>{200});
  // 100 execs bc: the pass read 100's comm for the first selector, and the second uses it.
  scan.provider.beginPass();
  CHECK(pids(scan.selector) == std::vector<pid_t>{100});
  t.process(100, "bc", std::string("bc\0", 3), "/usr/bin/bc");
  CHECK(pids(bc) == std::vector<pid_t>{200});  // 100 was known not to match with comm tierd-gups
  scan.provider.beginPass();
  CHECK(pids(bc) == std::vector<pid_t>{100, 200});
  // Without a pass every resolve reads afresh (tierctl, and a provider never told of a pass).
  SysRootScopeProvider fresh(sys::SysRoot(t.dir.string()), 1);
  CHECK(fresh.resolve(bc)->pids == std::vector<pid_t>{100, 200});
  t.process(300, "bc", std::string("bc\0", 3), "/usr/bin/bc");
  CHECK(fresh.resolve(bc)->pids == std::vector<pid_t>{100, 200, 300});
}

// DamonPool on the fake DAMON sysfs: one kdamond per sampled process, the ownership record that
// lets a restarted tierd reclaim what a killed one left running, and DAMON_STAT.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "FakeDamonFs.h"
#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/DamonSource.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {

DamonConfig monitor(pid_t pid) {
  DamonConfig c;
  c.pid = pid;
  c.snapshotNs = 1000;
  return c;
}

/// A kdamond as a crash or an administrator leaves it.
struct Kdamond {
  int slot = 0;
  pid_t target = 0;  ///< 0: no target
  bool running = false;
  std::string operations = "vaddr";
  pid_t thread = 4343;  ///< kdamonds/N/pid while running
};

struct PoolRig {
  FakeDamonFs fs;
  std::string owner;
  PoolRig() {
    owner = fs.tree().dir() + "/run/tierd/damon.owner";
    fs.tree().mkdir("/run");
    fs.tree().file("/proc/sys/kernel/random/boot_id", "b00t\n");
  }
  DamonPoolConfig config(int capacity, pid_t self = 100) const {
    DamonPoolConfig c;
    c.capacity = capacity;
    c.ownerFile = owner;
    c.selfPid = self;
    c.selfStartTime = 5;
    return c;
  }
  std::string record() const {
    std::ifstream in(owner);
    std::string line;
    std::getline(in, line);
    return line;
  }
  std::string text() const {
    std::ifstream in(owner);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void writeRecord(const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(owner).parent_path());
    std::ofstream(owner) << text;
  }
  /// Makes `n` kdamonds (as writing nr_kdamonds does) and configures `kdamonds` as a source
  /// would, through the fake's kernel answers; the log is cleared after.
  void leaveKdamonds(int n, const std::vector<Kdamond>& kdamonds) {
    const std::string root = std::string(FakeDamonFs::kRoot) + "/";
    REQUIRE(fs.write(root + "nr_kdamonds", std::to_string(n)).ok());
    for (const Kdamond& k : kdamonds) {
      const std::string d = root + std::to_string(k.slot) + "/";
      REQUIRE(fs.write(d + "contexts/nr_contexts", "1").ok());
      REQUIRE(fs.write(d + "contexts/0/operations", k.operations).ok());
      if (k.target) {
        REQUIRE(fs.write(d + "contexts/0/targets/nr_targets", "1").ok());
        REQUIRE(fs.write(d + "contexts/0/targets/0/pid_target", std::to_string(k.target)).ok());
      }
      if (k.running) {
        REQUIRE(fs.write(d + "state", "on").ok());
        fs.tree().file(d + "pid", std::to_string(k.thread) + "\n");
      }
    }
    fs.log.clear();
  }
  /// Every kdamond's state, pid and context, to see that nothing changed.
  std::string kdamondStates() {
    std::string out = fs.readAttr(std::string(FakeDamonFs::kRoot) + "/nr_kdamonds").valueOr("?");
    for (const auto& k : fs.list(FakeDamonFs::kRoot).valueOr({})) {
      const std::string d = std::string(FakeDamonFs::kRoot) + "/" + k + "/";
      for (const char* f : {"state", "pid", "contexts/nr_contexts", "contexts/0/operations"})
        out += " " + fs.readAttr(d + f).valueOr("-");
    }
    return out;
  }
  bool has(const std::string& write) const {
    return std::find(fs.log.begin(), fs.log.end(), write) != fs.log.end();
  }
};

}  // namespace

TEST_CASE(
    "every scoped process is sampled: one kdamond each from one pool, removed after the last") {
  PoolRig r;
  DamonPool pool(r.fs, r.config(4));
  DamonSource a(monitor(501), r.fs, pool);
  DamonSource b(monitor(502), r.fs, pool);
  REQUIRE(a.start().ok());
  REQUIRE(b.start().ok());
  CHECK(r.has("nr_kdamonds <- 4"));
  CHECK(r.has("0/contexts/0/targets/0/pid_target <- 501"));
  CHECK(r.has("1/contexts/0/targets/0/pid_target <- 502"));
  CHECK(r.has("1/state <- on"));
  CHECK(pool.inUse() == 2);
  // Ownership is on record before the kdamonds exist.
  CHECK(r.record() == "tierd_pid=100 tierd_start=5 boot_id=b00t nr_kdamonds=4");
  r.fs.regions = {{0x7f0000000000, 0x7f0000400000, 3, 1}};
  CHECK_FALSE(b.drain(5000).value().empty());
  a.stop();
  CHECK(pool.inUse() == 1);
  CHECK_FALSE(r.has("nr_kdamonds <- 0"));  // b still runs
  b.stop();
  CHECK(r.fs.log.back() == "nr_kdamonds <- 0");
  CHECK_FALSE(std::filesystem::exists(r.owner));
}

TEST_CASE("creating the pool never reads /proc/kallsyms (the sampling probe already did)") {
  PoolRig r;
  r.fs.tree().file("/proc/kallsyms", "0000000000000000 t damon_va_check_accesses\n");
  CHECK(probeDamon(r.fs).vaddr == "yes");  // the probe with evidence reads it
  CHECK(std::count(r.fs.reads.begin(), r.fs.reads.end(), "/proc/kallsyms") == 1);
  CHECK(probeDamon(r.fs, VaddrEvidence::Skip).vaddr == "unknown");
  DamonPool pool(r.fs, r.config(2));
  DamonSource a(monitor(501), r.fs, pool);
  REQUIRE(a.start().ok());
  CHECK(r.has("nr_kdamonds <- 2"));
  CHECK(std::count(r.fs.reads.begin(), r.fs.reads.end(), "/proc/kallsyms") == 1);
  a.stop();
}

TEST_CASE("a process beyond the pool's kdamonds is refused with the key to raise") {
  PoolRig r;
  DamonPool pool(r.fs, r.config(1));
  DamonSource a(monitor(501), r.fs, pool);
  DamonSource b(monitor(502), r.fs, pool);
  REQUIRE(a.start().ok());
  Status s = b.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().describe().find("sampling.damon_max_processes") != std::string::npos);
  // A freed slot is taken by the next start (the engine retries failed sources).
  a.stop();
  CHECK(b.start().ok());
}

TEST_CASE("the ownership record names each kdamond's pid, operations and target, start to stop") {
  PoolRig r;
  DamonPool pool(r.fs, r.config(2));
  DamonSource a(monitor(501), r.fs, pool);
  DamonSource b(monitor(502), r.fs, pool);
  REQUIRE(a.start().ok());
  CHECK(r.text() ==
        "tierd_pid=100 tierd_start=5 boot_id=b00t nr_kdamonds=2\n"
        "kdamond=0 pid=4242 operations=vaddr target=501\n");
  REQUIRE(b.start().ok());
  a.stop();  // off, still configured: its pid is gone from the record, the rest stays
  CHECK(r.text() ==
        "tierd_pid=100 tierd_start=5 boot_id=b00t nr_kdamonds=2\n"
        "kdamond=0 pid=-1 operations=vaddr target=501\n"
        "kdamond=1 pid=4242 operations=vaddr target=502\n");
  auto parsed = parseDamonOwnerRecord(r.text(), "f");
  REQUIRE(parsed.ok());
  CHECK(formatDamonOwnerRecord(parsed.value()) == r.text());
  b.stop();
  CHECK_FALSE(std::filesystem::exists(r.owner));
}

TEST_CASE("kdamonds left running by a killed tierd are reclaimed at the next start") {
  PoolRig r;
  // What SIGKILL leaves (a pool that is destroyed cleans up, so written as the kernel holds it):
  // kdamond 0 running for 501, kdamond 1 stopped after monitoring 502, kdamond 2 never used.
  r.leaveKdamonds(3, {{0, 501, true, "vaddr", 4242}, {1, 502, false}});
  r.writeRecord(
      "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=3\n"
      "kdamond=0 pid=4242 operations=vaddr target=501\n"
      "kdamond=1 pid=-1 operations=vaddr target=502\n");
  // pid 4000 has no /proc entry: that tierd is gone.
  DamonPool fresh(r.fs, r.config(2));
  auto reclaimed = fresh.reclaimOrphans();
  REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.error().describe());
  CHECK(reclaimed.value() == 3);
  CHECK(r.fs.log == std::vector<std::string>{"0/state <- off", "nr_kdamonds <- 0"});
  CHECK_FALSE(std::filesystem::exists(r.owner));
  DamonSource again(monitor(501), r.fs, fresh);
  CHECK(again.start().ok());
}

TEST_CASE(
    "a kdamond the target's exit stopped, or one a crash left half-configured, is reclaimed") {
  PoolRig r;
  r.leaveKdamonds(2, {{0, 501, true, "vaddr", 4242}});
  r.fs.processGone = true;  // the kernel stopped kdamond 0 when 501 exited
  // Kdamond 1: the record was written before its configuration, the crash came before any of it.
  r.writeRecord(
      "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n"
      "kdamond=0 pid=4242 operations=vaddr target=501\n"
      "kdamond=1 pid=-1 operations=vaddr target=502\n");
  DamonPool fresh(r.fs, r.config(2));
  auto reclaimed = fresh.reclaimOrphans();
  REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.error().describe());
  CHECK(r.fs.log == std::vector<std::string>{"nr_kdamonds <- 0"});
}

TEST_CASE("an administrator's kdamonds that merely make nr_kdamonds match are left alone") {
  const std::string dead =
      "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n"
      "kdamond=0 pid=4242 operations=vaddr target=501\n";
  struct Case {
    const char* name;
    std::vector<Kdamond> kdamonds;
    const char* says;
  };
  const Case cases[] = {
      // After the crash: all turned off, nr_kdamonds written anew, one started for paddr.
      {"a paddr kdamond where ours ran", {{0, 0, true, "paddr"}}, "runs as pid 4343"},
      // The same operations and target, another thread: not the one the record names.
      {"another thread with our target", {{0, 501, true}}, "runs as pid 4343"},
      // Made anew, nothing configured yet: ours (recorded running) cannot look like that.
      {"the kdamonds made anew", {}, "made anew"},
      // Ours where the record says, and a configured one where we configured none.
      {"one configured beside ours", {{0, 501, true, "vaddr", 4242}, {1, 600, false}}, "kdamond 1"},
      {"one running beside ours", {{0, 501, true, "vaddr", 4242}, {1, 600, true}}, "kdamond 1"},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    PoolRig r;
    r.leaveKdamonds(2, c.kdamonds);
    r.writeRecord(dead);
    const std::string before = r.kdamondStates();
    DamonPool pool(r.fs, r.config(2));
    auto reclaimed = pool.reclaimOrphans();
    REQUIRE_FALSE(reclaimed.ok());
    CHECK_MESSAGE(reclaimed.error().describe().find(c.says) != std::string::npos,
                  reclaimed.error().describe());
    CHECK(reclaimed.error().describe().find("DAMON left alone") != std::string::npos);
    CHECK(r.fs.log.empty());
    CHECK(r.kdamondStates() == before);
    CHECK_FALSE(std::filesystem::exists(r.owner));  // said once, not at every start
  }
}

TEST_CASE("a record of an older tierd (no kdamond lines): idle kdamonds reclaimed, running kept") {
  {
    PoolRig r;
    r.leaveKdamonds(2, {});
    r.writeRecord("tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n");
    DamonPool pool(r.fs, r.config(2));
    auto reclaimed = pool.reclaimOrphans();
    REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.error().describe());
    CHECK(reclaimed.value() == 2);
  }
  PoolRig r;
  r.leaveKdamonds(2, {{0, 501, true}});
  r.writeRecord("tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n");
  DamonPool pool(r.fs, r.config(2));
  auto reclaimed = pool.reclaimOrphans();
  REQUIRE_FALSE(reclaimed.ok());
  CHECK(reclaimed.error().describe().find("no kdamond running there") != std::string::npos);
  CHECK(r.fs.log.empty());
}

TEST_CASE("a record of a live tierd, or of a count that changed, leaves DAMON untouched") {
  PoolRig r;
  REQUIRE(r.fs.write(std::string(FakeDamonFs::kRoot) + "/nr_kdamonds", "2").ok());
  r.fs.tree().file("/proc/4000/stat",
                   "4000 (tierd) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n");
  std::filesystem::create_directories(std::filesystem::path(r.owner).parent_path());
  { std::ofstream(r.owner) << "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n"; }
  r.fs.log.clear();
  DamonPool pool(r.fs, r.config(2));
  auto live = pool.reclaimOrphans();
  REQUIRE_FALSE(live.ok());
  CHECK(live.error().describe().find("another tierd (pid 4000)") != std::string::npos);
  CHECK(r.fs.log.empty());
  CHECK(std::filesystem::exists(r.owner));

  // The recorded tierd is gone but nr_kdamonds no longer matches: someone else's now.
  { std::ofstream(r.owner) << "tierd_pid=4001 tierd_start=77 boot_id=b00t nr_kdamonds=3\n"; }
  auto changed = pool.reclaimOrphans();
  REQUIRE_FALSE(changed.ok());
  CHECK(r.fs.log.empty());
  CHECK_FALSE(std::filesystem::exists(r.owner));
  // A record of another boot is dropped without a write.
  { std::ofstream(r.owner) << "tierd_pid=4001 tierd_start=77 boot_id=old nr_kdamonds=2\n"; }
  auto other = pool.reclaimOrphans();
  REQUIRE(other.ok());
  CHECK(other.value() == 0);
  CHECK(r.fs.log.empty());
}

TEST_CASE("DAMON_STAT holding DAMON: unusable, the reason says what to do, nothing written") {
  PoolRig r;
  r.fs.tree().file("/sys/module/damon_stat/parameters/enabled", "Y\n");
  DamonProbe p = probeDamon(r.fs);
  CHECK_FALSE(p.usable);
  CHECK(p.why.find("damon_stat.enabled=N") != std::string::npos);
  CHECK(p.why.find("sampling.damon_stat") != std::string::npos);
  DamonPool pool(r.fs, r.config(2));
  DamonSource a(monitor(501), r.fs, pool);
  Status s = a.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().describe().find("DAMON_STAT") == std::string::npos);  // named by module
  CHECK(s.error().describe().find("damon_stat") != std::string::npos);
  CHECK(r.fs.log.empty());
  r.fs.tree().file("/sys/module/damon_stat/parameters/enabled", "N\n");
  CHECK(a.start().ok());
}

TEST_CASE("ownership records are parsed strictly") {
  auto ok = parseDamonOwnerRecord("tierd_pid=1 tierd_start=2 boot_id=x nr_kdamonds=3", "f");
  REQUIRE(ok.ok());
  CHECK(ok->pid == 1);
  CHECK(ok->nrKdamonds == 3);
  CHECK_FALSE(parseDamonOwnerRecord("tierd_pid=1 tierd_start=2 boot_id=x", "f").ok());
  CHECK_FALSE(
      parseDamonOwnerRecord("tierd_pid=1 tierd_start=2 boot_id=x nr_kdamonds=99", "f").ok());
  CHECK_FALSE(parseDamonOwnerRecord("tierd_pid=x tierd_start=2 boot_id=x nr_kdamonds=3", "f").ok());
}

TEST_CASE("a zombie's record is an orphan's, a record without kdamonds is just removed") {
  PoolRig r;
  REQUIRE(r.fs.write(std::string(FakeDamonFs::kRoot) + "/nr_kdamonds", "2").ok());
  r.fs.tree().file("/proc/4000/stat",
                   "4000 (tierd) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0\n");
  std::filesystem::create_directories(std::filesystem::path(r.owner).parent_path());
  { std::ofstream(r.owner) << "tierd_pid=4000 tierd_start=77 boot_id=b00t nr_kdamonds=2\n"; }
  DamonPool pool(r.fs, r.config(2));
  auto reclaimed = pool.reclaimOrphans();
  REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.error().describe());
  CHECK(reclaimed.value() == 2);
  { std::ofstream(r.owner) << "tierd_pid=4001 tierd_start=77 boot_id=b00t nr_kdamonds=2\n"; }
  r.fs.log.clear();
  auto none = pool.reclaimOrphans();
  REQUIRE(none.ok());
  CHECK(none.value() == 0);
  CHECK(r.fs.log.empty());
  CHECK_FALSE(std::filesystem::exists(r.owner));
}

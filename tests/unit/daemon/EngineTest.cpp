// The tick engine end to end on fakes: the rig guest's topology (captured), a ModelKernelMigrator
// holding the workload's pages, and a scripted hotness source.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../telemetry/FakePerfEventOpener.h"
#include "policy/ConfigCompiler.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Daemon.h"
#include "tierd/daemon/Engine.h"
#include "tierd/simulate/ModelKernelMigrator.h"

using namespace tierd;
using namespace tierd::daemon;
namespace fs = std::filesystem;

namespace {

constexpr pid_t kPid = 4242;
constexpr pid_t kStranger = 4343;  // hot too, but in no workload
constexpr uint64_t kBase = 0x7f0000000000;
constexpr uint64_t kTable = 64 * kMiB;  // 32 THP regions
constexpr uint64_t kSecond = 1'000'000'000;

// Samples the first `*hotRegions` 2 MiB regions of kPid and of kStranger, `perRegion` times each
// (the test may change the count between ticks).
class ScriptedSource final : public telemetry::HotnessSource {
 public:
  /// `weighted`: counted as a rate per tick (WeightKind::Weighted, as DAMON), not per sample.
  ScriptedSource(pid_t pid, std::shared_ptr<const int> hotRegions, int perRegion,
                 bool weighted = false)
      : pid_(pid), hot_(std::move(hotRegions)), per_(perRegion), weighted_(weighted) {}
  std::string name() const override { return "scripted"; }
  telemetry::WeightKind weightKind() const override {
    return weighted_ ? telemetry::WeightKind::Weighted : telemetry::WeightKind::PerSample;
  }
  Status start() override { return Ok{}; }
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override {
    std::vector<AccessSample> out;
    for (int r = 0; r < *hot_; ++r)
      for (int i = 0; i < per_; ++i)
        for (pid_t p : {pid_, kStranger})
          out.push_back({untilNs, p, p, 0, kBase + r * 2 * kMiB + i * 4096, 1, 0});
    stats_.samples += out.size();
    return out;
  }
  Status collect() override {
    ++collects->calls;
    if (collects->fail) return Error::sys(EIO, "ring corrupt", "collect");
    return Ok{};
  }
  void stop() override { *stopped = true; }
  telemetry::SourceStats stats() const override { return stats_; }
  std::string state() const override { return "scripted " + std::to_string(*hot_) + " hot"; }
  void setSettled(bool s) override { *settled = s; }
  uint64_t pauseLeadNs() const override { return pause->leadNs; }
  Status setPaused(bool p) override {
    pause->calls += p ? "P" : "R";
    if (pause->fail) return Error::sys(EINVAL, "commit", "state");
    pause->paused = p;
    return Ok{};
  }
  /// What the engine asked of pausing (Engine::pauseSampling): the lead this source answers, a
  /// failure to script, every setPaused call in order ("P" pause, "R" resume).
  struct Pause {
    uint64_t leadNs = 0;
    bool fail = false;
    bool paused = false;
    std::string calls;
  };
  /// collect() calls so far, and whether they fail.
  struct Collect {
    int calls = 0;
    bool fail = false;
  };
  /// Outlive the source (the engine destroys a source when its process leaves).
  std::shared_ptr<bool> stopped = std::make_shared<bool>(false);
  std::shared_ptr<bool> settled = std::make_shared<bool>(false);  ///< setSettled()'s last value
  std::shared_ptr<Pause> pause = std::make_shared<Pause>();
  std::shared_ptr<Collect> collects = std::make_shared<Collect>();

 private:
  pid_t pid_;
  std::shared_ptr<const int> hot_;
  int per_;
  bool weighted_;
  telemetry::SourceStats stats_;
};

// The fake migrator with a hook run at the start of execute(): after planning, before moving.
class HookedMigrator final : public migrate::Migrator {
 public:
  migrate::ModelKernelMigrator fake;
  std::function<void()> beforeExecute;
  int executes = 0;
  int64_t lastDeadlineNs = 0;  ///< the deadline of the last execute()
  int64_t lastStartNs = 0;     ///< the clock when the last execute() began
  BatchResult execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                      const std::atomic<bool>* stop) override {
    ++executes;
    lastDeadlineNs = deadlineNs;
    lastStartNs = fake.nowNs();
    if (beforeExecute) beforeExecute();
    return fake.execute(batch, deadlineNs, stop);
  }
  Result<LocateResult> locate(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return fake.locate(pid, ranges);
  }
  Result<LocateResult> locatePages(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return fake.locatePages(pid, ranges);
  }
  int64_t nowNs() override { return fake.nowNs(); }
  void setProcessCheck(ProcessCheck check) override { fake.setProcessCheck(std::move(check)); }
  void setLimits(const migrate::MigrationLimits& limits) override { fake.setLimits(limits); }
  void setMinBytesPerCall(uint64_t bytes) override { fake.setMinBytesPerCall(bytes); }
};

struct Rig {
  fs::path root;
  migrate::ModelKernelMigrator* fake = nullptr;
  HookedMigrator* hooked = nullptr;
  std::unique_ptr<Engine> engine;
  std::vector<std::shared_ptr<bool>> sourceStopped;  ///< one flag per source created
  std::vector<std::shared_ptr<bool>> sourceSettled;  ///< per source created: told settled
  std::vector<std::shared_ptr<ScriptedSource::Collect>> sourceCollect;  ///< per source created
  std::shared_ptr<int> hotRegions = std::make_shared<int>(4);  ///< the scripted sources' hot set
  int failSources = 0;  ///< the next N sources fail to build (DAMON busy, a full pool)
  std::function<void(pid_t)> beforeSmaps;  ///< run before each smaps read (after the scope pass)

  /// `fixture`: a captured tree under tests/fixtures/topology; the workload's pages start on
  /// `startNode` (a slow node of it). `factory` replaces the scripted sources.
  explicit Rig(const std::string& extraToml = "", const std::string& fixture = "qemu-2node",
               NodeId startNode = 1, SourceFactory factory = {}) {
    char tmpl[] = "/tmp/engine-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    fs::copy(std::string(TIERD_FIXTURES) + "/topology/" + fixture, root,
             fs::copy_options::recursive);
    put("/proc/self/mountinfo", "23 1 0:21 / / rw - ext4 /dev/vda rw\n");
    process(kPid, "tierd-gups", "/usr/bin/tierd-gups", 1000);
    process(kStranger, "other", "/usr/bin/other", 1000);

    const std::string toml = std::string(R"(
[daemon]
interval = "1s"
[migration]
max_promote_mib_per_s = 1024
max_demote_mib_per_s = 1024
fast_headroom = "1%"
[[workload]]
name = "gups"
command = "tierd-gups"
hot_threshold = 2.0
cold_threshold = 0.5
heat_half_life = "10s"
cooldown = "5s"
)") + extraToml;
    auto compiled = policy::compileConfigText(toml, "engine-test.toml");
    if (!compiled.ok()) FAIL(compiled.errors.front().describe());
    auto config = std::make_shared<const policy::CompiledConfig>(*compiled.config);

    auto migrator = std::make_unique<HookedMigrator>();
    hooked = migrator.get();
    fake = &migrator->fake;
    for (pid_t p : {kPid, kStranger}) {
      fake->kernel().map(p, kBase, kTable, migrate::FakeBacking::Thp);
      fake->kernel().populate(p, kBase, kTable, startNode);  // everything starts slow
    }
    auto* kernel = &fake->kernel();
    if (!factory)
      factory = [this](pid_t pid,
                       const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
        if (failSources > 0) {
          --failSources;
          return Error::env("DAMON busy: kdamond 0 is not ours", "test");
        }
        auto s = std::make_unique<ScriptedSource>(pid, hotRegions, 8);
        sourceStopped.push_back(s->stopped);
        sourceSettled.push_back(s->settled);
        sourceCollect.push_back(s->collects);
        return std::unique_ptr<telemetry::HotnessSource>(std::move(s));
      };
    engine = std::make_unique<Engine>(
        sys::SysRoot(root.string()), std::move(migrator), factory,
        /*selfPid=*/1, config,
        [this, kernel](pid_t pid) {
          if (beforeSmaps) beforeSmaps(pid);
          return kernel->smaps(pid);
        },
        // A test's own /proc/PID/numa_maps under the root, else the fake kernel's.
        [this, kernel](pid_t pid) -> Result<std::vector<sys::NumaMapsVma>> {
          if (fs::exists(root / "proc" / std::to_string(pid) / "numa_maps"))
            return sys::readNumaMaps(sys::SysRoot(root.string()), pid);
          return kernel->numaMaps(pid);
        },
        [kernel](pid_t pid) { return kernel->maps(pid); }, fake->reads());
  }
  ~Rig() {
    engine.reset();
    fs::remove_all(root);
  }
  void put(const std::string& abs, const std::string& text) const {
    fs::create_directories(fs::path(root.string() + abs).parent_path());
    std::ofstream(root.string() + abs, std::ios::binary) << text;
  }
  // /proc/PID of a process: comm, cmdline, stat (start time = field 22) and the exe link.
  void process(pid_t pid, const std::string& comm, const std::string& exe, uint64_t start) const {
    const std::string d = "/proc/" + std::to_string(pid);
    put(d + "/comm", comm + "\n");
    put(d + "/cmdline", comm + std::string(1, '\0'));
    put(d + "/stat", std::to_string(pid) + " (" + comm +
                         ") S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " + std::to_string(start) +
                         " 0 0\n");
    status(pid, "0-63", "0-3");
    fs::remove(root.string() + d + "/exe");
    fs::create_symlink(exe, root.string() + d + "/exe");
  }
  // /proc/PID/status with the task's CPU affinity and cpuset.mems (kernel list format).
  void status(pid_t pid, const std::string& cpus, const std::string& mems) const {
    put("/proc/" + std::to_string(pid) + "/status",
        "Name:\tx\nCpus_allowed_list:\t" + cpus + "\nMems_allowed_list:\t" + mems + "\n");
  }
  TickReport tick(uint64_t second) {
    auto r = engine->tick(second * kSecond, INT64_MAX, nullptr);
    REQUIRE_MESSAGE(r.ok(), r.error().describe());
    return r.value();
  }
  // Ticks at seconds `second` + 1, + 2, ... (at most 40 ticks) until placement is settled;
  // `second` is left at the tick that settled it.
  TickReport tickUntilSettled(uint64_t& second) {
    TickReport r = tick(++second);
    for (int i = 1; i < 40 && !r.settled; ++i)
      r = tick(++second);
    REQUIRE(r.settled);
    return r;
  }
  int regionsOn(pid_t pid, NodeId node) const {
    int n = 0;
    for (uint64_t a = kBase; a < kBase + kTable; a += 2 * kMiB)
      if (fake->kernel().nodeOf(pid, a) == node) ++n;
    return n;
  }
};

}  // namespace

// How many of a tick's problems mention `needle` (each problem is said once per stretch).
long problemsSaying(const TickReport& r, const std::string& needle) {
  return std::count_if(r.problems.begin(), r.problems.end(),
                       [&](const std::string& p) { return p.find(needle) != std::string::npos; });
}

// Sets daemon.full_locate_interval to "0s": every tick reads each process in full.
void readEveryTick(Rig& rig) {
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->daemon.fullLocateIntervalNs = 0;
  rig.engine->setConfig(cfg);
}

TEST_CASE("the engine promotes the sampled hot set of a scoped process, and only that") {
  Rig rig;
  TickReport first = rig.tick(1);
  CHECK(first.topologyMethod == "memory-tiers");
  CHECK(first.fastNodes == std::vector<NodeId>{0});
  REQUIRE(first.workloads.size() == 1);
  CHECK(first.workloads[0].pids == 1);
  CHECK(first.samples == 4 * 8);  // the stranger's samples are filtered out
  for (uint64_t s = 2; s <= 5; ++s)
    rig.tick(s);

  // The 4 hot regions are on the fast node; the cold rest stayed; the stranger was never moved.
  for (int r = 0; r < 4; ++r)
    CHECK(rig.fake->kernel().nodeOf(kPid, kBase + r * 2 * kMiB) == 0);
  CHECK(rig.regionsOn(kPid, 0) == 4);
  CHECK(rig.regionsOn(kStranger, 1) == 32);
  CHECK(rig.engine->totals().promotedBytes == 4 * 2 * kMiB);
  CHECK(rig.engine->totals().demotedBytes == 0);
  TickReport later = rig.tick(6);
  CHECK(later.workloads[0].hotFastBytes == 4 * 2 * kMiB);
  CHECK(later.workloads[0].hotSlowBytes == 0);
  CHECK(later.promotedBytes == 0);  // settled: no ping-pong
}

TEST_CASE("sources settle after 10 ticks that planned nothing and unsettle at the next plan") {
  Rig rig;
  uint64_t lastPlanned = 0, settledAt = 0;
  for (uint64_t s = 1; s <= 40 && !settledAt; ++s) {
    TickReport r = rig.tick(s);
    REQUIRE(rig.sourceSettled.size() == 1);
    CHECK(*rig.sourceSettled.front() == r.settled);
    if (r.plannedPromoteBytes + r.plannedDemoteBytes > 0) lastPlanned = s;
    if (r.settled) settledAt = s;
  }
  REQUIRE(lastPlanned > 0);  // the hot set was promoted first
  CHECK(rig.regionsOn(kPid, 0) == 4);
  CHECK(settledAt == lastPlanned + Engine::kSettleTicks);
  TickReport still = rig.tick(settledAt + 1);
  CHECK(still.settled);
  // Four more regions turn hot: the first tick that plans them unsettles the source.
  *rig.hotRegions = 8;
  uint64_t s = settledAt + 2;
  TickReport r = rig.tick(s);
  while (r.plannedPromoteBytes == 0 && s < settledAt + 10) {
    CHECK(r.settled);
    r = rig.tick(++s);
  }
  CHECK(r.plannedPromoteBytes > 0);
  CHECK_FALSE(r.settled);
  CHECK_FALSE(*rig.sourceSettled.front());
}

TEST_CASE("settled sources stay settled through a trickle of moves and unsettle at a shift") {
  Rig rig("[sampling]\nsettle_trickle_percent = 30\n");
  uint64_t s = 0;
  TickReport r = rig.tickUntilSettled(s);
  CHECK(rig.regionsOn(kPid, 0) == 4);
  CHECK(r.settleWindowBytes == 0);  // the hot set's promotion is out of the window
  // A fifth region turns hot: 2 MiB planned, 20% of the 10 MiB hot: a trickle, still settled.
  *rig.hotRegions = 5;
  r = rig.tick(++s);
  CHECK(r.plannedPromoteBytes == 2 * kMiB);
  CHECK(r.settleWindowBytes == 2 * kMiB);
  CHECK(r.settled);
  CHECK(*rig.sourceSettled.front());
  CHECK(rig.regionsOn(kPid, 0) == 5);
  // The hot set grows to 12 regions: 14 MiB planned, the window's 16 MiB is 67% of the 24 MiB
  // hot: the sources are unsettled by the tick that plans it.
  *rig.hotRegions = 12;
  r = rig.tick(++s);
  CHECK(r.plannedPromoteBytes == 14 * kMiB);
  CHECK(r.settleWindowBytes == 16 * kMiB);
  CHECK_FALSE(r.settled);
  CHECK_FALSE(*rig.sourceSettled.front());
  // Once the shift's plan has left the window, they settle again.
  for (uint64_t end = s + Engine::kSettleTicks; s < end;) {
    r = rig.tick(++s);
    CHECK(r.settled == (s == end));
  }
  CHECK(rig.regionsOn(kPid, 0) == 12);
}

// A rig whose sources are weighted (rates per tick, as DAMON's) and whose daemon.settled_interval
// is `settledSeconds` (0: off).
std::unique_ptr<Rig> weightedRig(uint64_t settledSeconds) {
  auto hot = std::make_shared<int>(4);
  auto rig = std::make_unique<Rig>(
      "", "qemu-2node", 1,
      [hot](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
        return std::unique_ptr<telemetry::HotnessSource>(
            std::make_unique<ScriptedSource>(pid, hot, 8, /*weighted=*/true));
      });
  auto cfg = std::make_shared<policy::CompiledConfig>(rig->engine->config());
  cfg->daemon.settledIntervalNs = settledSeconds * kSecond;
  rig->engine->setConfig(cfg);
  return rig;
}

TEST_CASE(
    "settled ticks ask for daemon.settled_interval, and a weighted rate counts for the wait") {
  auto longWait = weightedRig(4), everySecond = weightedRig(0);
  uint64_t s = 0, t = 0;
  TickReport first = longWait->tick(++s);
  CHECK(first.nextIntervalNs == kSecond);  // not settled: daemon.interval
  TickReport r = longWait->tickUntilSettled(s);
  TickReport q = everySecond->tickUntilSettled(t);
  REQUIRE(s == t);
  CHECK(r.nextIntervalNs == 4 * kSecond);
  CHECK(q.nextIntervalNs == kSecond);  // off: interval while settled too
  // One tick after the 4 s wait against four regular ones: the same heat (the regions' rates
  // count once per interval waited, HeatModel's TickSpan), still settled, nothing planned.
  r = longWait->tick(s + 4);
  for (uint64_t k = 1; k <= 4; ++k)
    q = everySecond->tick(t + k);
  auto a = longWait->engine->heat().regions(0, (s + 4) * kSecond);
  auto b = everySecond->engine->heat().regions(0, (t + 4) * kSecond);
  REQUIRE(a.size() >= 4);  // every region of the mapping; the first four are sampled
  CHECK(a[0].heat > 8);
  REQUIRE(b.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(a[i].heat == doctest::Approx(b[i].heat).epsilon(1e-4));
  CHECK(r.settled);
  CHECK(r.plannedPromoteBytes + r.plannedDemoteBytes == 0);
  CHECK(r.workloads[0].hotFastBytes == q.workloads[0].hotFastBytes);
  // A tick sooner than the wait (a reload woke the daemon) counts only the time that passed.
  const double before = longWait->engine->heat().regions(0, (s + 4) * kSecond)[0].heat;
  longWait->tick(s + 5);
  const double after = longWait->engine->heat().regions(0, (s + 5) * kSecond)[0].heat;
  CHECK(after == doctest::Approx(before * std::exp2(-0.1) + 8).epsilon(1e-4));
}

TEST_CASE("a settled wait pauses the sources that can pause, for the wait less the window") {
  auto pause = std::make_shared<ScriptedSource::Pause>();
  auto hot = std::make_shared<int>(4);
  Rig rig("", "qemu-2node", 1,
          [&](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
            auto src = std::make_unique<ScriptedSource>(pid, hot, 8, /*weighted=*/true);
            src->pause = pause;
            return std::unique_ptr<telemetry::HotnessSource>(std::move(src));
          });
  auto withWindow = [&](uint64_t windowMs) {
    auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
    cfg->daemon.settledIntervalNs = 4 * kSecond;
    cfg->sampling.settledDamonWindowNs = windowMs * 1'000'000;
    rig.engine->setConfig(cfg);
  };
  uint64_t s = 0;
  rig.tickUntilSettled(s);
  std::vector<std::string> problems;
  pause->leadNs = 300'000'000;
  // sampling.settled_damon_window 0: nothing paused, nothing asked.
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 0);
  CHECK(pause->calls.empty());
  // 1 s: the source sleeps until 1 s before the tick, then samples again.
  withWindow(1000);
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == kSecond);
  CHECK(pause->paused);
  rig.engine->resumeSampling(3 * kSecond, problems);
  rig.engine->resumeSampling(3 * kSecond, problems);  // idempotent: resumed once
  CHECK(pause->calls == "PR");
  CHECK(rig.engine->totals().samplingPausedNs == 3 * kSecond);  // paused at 0, resumed at 3 s
  CHECK_FALSE(pause->paused);
  // The source needs longer than the window: its lead wins.
  pause->leadNs = 2 * kSecond;
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 2 * kSecond);
  rig.engine->resumeSampling(3 * kSecond, problems);
  // A wait no longer than the lead: not paused at all.
  CHECK(rig.engine->pauseSampling(0, 2 * kSecond, problems) == 0);
  CHECK(pause->calls == "PRPR");
  CHECK(problems.empty());
  CHECK(rig.engine->totals().samplingPausedNs == 6 * kSecond);
  // A failed pause: said, nothing to resume, the source samples on.
  pause->fail = true;
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 0);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("pause: ") != std::string::npos);
  rig.engine->resumeSampling(3 * kSecond, problems);
  CHECK(pause->calls == "PRPRP");
  CHECK(rig.engine->totals().samplingPausedNs == 6 * kSecond);  // nothing was paused
  // A failed resume: said (the source's next drain retries).
  pause->fail = false;
  REQUIRE(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 2 * kSecond);
  pause->fail = true;
  rig.engine->resumeSampling(3 * kSecond, problems);
  REQUIRE(problems.size() == 2);
  CHECK(problems[1].find("resume: ") != std::string::npos);
  pause->fail = false;
  problems.clear();
  // A source that cannot pause: said once, never asked.
  pause->leadNs = 0;
  pause->calls.clear();
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 0);
  CHECK(rig.engine->pauseSampling(0, 4 * kSecond, problems) == 0);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("cannot pause; it samples throughout") != std::string::npos);
  CHECK(pause->calls.empty());
}

TEST_CASE("settled sources are unsettled when the heat model ranks nothing hot") {
  // In the rig a settled kdamond sampling every 320 ms saw every region of gups accessed: no
  // contrast, no hot bytes, no plan, so nothing would ever unsettle it.
  Rig rig;
  uint64_t s = 0;
  TickReport r = rig.tickUntilSettled(s);
  *rig.hotRegions = 0;  // no samples from now on: the heat decays below the hot threshold
  while (r.workloads[0].hotFastBytes + r.workloads[0].hotSlowBytes > 0 && s < 400) {
    CHECK(r.settled);
    r = rig.tick(++s);
  }
  REQUIRE(r.workloads[0].hotFastBytes + r.workloads[0].hotSlowBytes == 0);
  CHECK(r.plannedPromoteBytes + r.plannedDemoteBytes == 0);
  CHECK_FALSE(r.settled);
  CHECK_FALSE(*rig.sourceSettled.front());
  // Contrast back (the hot set, already on the fast node): settled again only after a whole
  // window of ticks that see it, so a source that lost contrast samples as before meanwhile.
  *rig.hotRegions = 4;
  for (uint64_t end = s + Engine::kSettleTicks; s < end;) {
    r = rig.tick(++s);
    CHECK(r.plannedPromoteBytes == 0);
    CHECK(r.settled == (s == end));
  }
}

TEST_CASE("with settle_trickle_percent 0 one planned region keeps the sources unsettled") {
  Rig rig("[sampling]\nsettle_trickle_percent = 0\n");
  uint64_t s = 0;
  TickReport r = rig.tickUntilSettled(s);
  *rig.hotRegions = 5;
  r = rig.tick(++s);
  CHECK(r.plannedPromoteBytes == 2 * kMiB);
  CHECK_FALSE(r.settled);
  CHECK_FALSE(*rig.sourceSettled.front());
}

TEST_CASE("each sampled process's source state comes with its heat against its promotion cut") {
  Rig rig;
  TickReport first = rig.tick(1);
  REQUIRE(first.sourceStates.size() == 1);  // the stranger is in no workload: no source
  const SourceState& st = first.sourceStates[0];
  CHECK(st.pid == kPid);
  CHECK(st.source == "scripted");
  CHECK(st.state == "scripted 4 hot");
  CHECK(st.regions == 32);  // every located 2 MiB region of the table, sampled or not
  CHECK(st.maxHeat == doctest::Approx(8.0));
  CHECK(st.meanHeat == doctest::Approx(4.0 * 8 / 32));
  CHECK(st.cut == doctest::Approx(2.0));  // hot_threshold (no hot_ratio)
  CHECK(st.hotSlowBytes == 4 * 2 * kMiB);
  CHECK(st.hotFastBytes == 0);
}

TEST_CASE("the migration step still runs when the earlier steps used up the tick") {
  // On a loaded machine with many processes, scope + locate + sampling can take longer than the
  // interval (the fleet-safety rig: 5 s ticks at a 1 s interval). The moves must still start.
  Rig rig;
  for (uint64_t s = 1; s <= 5; ++s) {
    auto r = rig.engine->tick(s * kSecond, /*deadlineNs=*/rig.fake->nowNs() - 1, nullptr);
    REQUIRE_MESSAGE(r.ok(), r.error().describe());
  }
  CHECK(rig.regionsOn(kPid, 0) == 4);
  CHECK(rig.engine->totals().promotedBytes == 4 * 2 * kMiB);
}

TEST_CASE("a tick whose earlier steps took long gives the moves a quarter of its wall time") {
  Rig rig;
  // Locate of the workload takes 12 s of wall time (a loaded machine), at a 1 s interval.
  rig.beforeSmaps = [&](pid_t) {
    rig.fake->kernel().sleepUntilNs(rig.fake->nowNs() + 12 * static_cast<int64_t>(kSecond),
                                    nullptr);
  };
  const int64_t before = rig.fake->nowNs();
  auto r = rig.engine->tick(1 * kSecond, /*deadlineNs=*/before + 1, nullptr);
  REQUIRE_MESSAGE(r.ok(), r.error().describe());
  REQUIRE(rig.hooked->executes == 1);
  const int64_t spent = rig.hooked->lastStartNs - before;
  CHECK(spent >= 12 * static_cast<int64_t>(kSecond));
  // A third of the 12 s before it (4 s), not the quarter interval (0.25 s).
  CHECK(rig.hooked->lastDeadlineNs - rig.hooked->lastStartNs == spent / 3);
}

TEST_CASE("dry-run decides but moves nothing") {
  Rig dry;
  auto cfg = std::make_shared<policy::CompiledConfig>(dry.engine->config());
  cfg->daemon.dryRun = true;
  dry.engine->setConfig(cfg);
  TickReport r1 = dry.tick(1);
  TickReport r2 = dry.tick(2);
  CHECK(r2.dryRun);
  CHECK(r1.plannedPromoteBytes + r2.plannedPromoteBytes > 0);
  CHECK(dry.regionsOn(kPid, 1) == 32);
  CHECK(dry.engine->totals().promotedBytes == 0);
}

TEST_CASE("a reloaded config's rate limits and latency target reach the migrator") {
  // (The migrator paces execute() by its config(): ModelKernelMigratorTest, "limits set between
  // batches".)
  Rig rig;
  rig.tick(1);
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->migration.maxPromoteMiBPerS = 2;
  cfg->migration.maxDemoteMiBPerS = 3;
  cfg->migration.callLatencyTargetNs = 5'000'000;
  rig.engine->setConfig(cfg);
  const migrate::MigratorConfig& m = rig.fake->engine().config();
  CHECK(m.promoteBytesPerSecond == 2 * kMiB);
  CHECK(m.demoteBytesPerSecond == 3 * kMiB);
  CHECK(m.callLatencyTargetNs == 5'000'000);
}

TEST_CASE("copy offload serving move_pages floors the migrator's call size at its minimum batch") {
  // kernel-patches/ patch 3's folder, as the patched kernel shows it (migrate-offload scenario).
  Rig rig;
  const std::string mo = rig.root.string() + "/sys/kernel/mm/migrate_offload";
  fs::create_directories(mo + "/counters");
  auto put = [&](const std::string& f, const std::string& v) { std::ofstream(mo + "/" + f) << v; };
  put("enable", "1\n");
  put("engine", "[threads]\n");
  put("threads", "2\n");
  put("min_batch_bytes", "4194304\n");
  put("reasons", "numa_misplaced demotion damon\n");
  for (const char* c :
       {"counters/batches", "counters/folios", "counters/bytes", "counters/fallbacks"})
    put(c, "0\n");
  rig.tick(1);
  // move_pages(2)'s reason is not enabled: tierd's calls copy on the CPU, no floor.
  CHECK(rig.fake->engine().config().minBytesPerCall == 0);
  put("reasons", "syscall_or_cpuset numa_misplaced demotion damon\n");
  rig.tick(2);
  CHECK(rig.fake->engine().config().minBytesPerCall == 4 * kMiB);
  put("enable", "0\n");  // the operator turns offload off: followed at the next tick
  rig.tick(3);
  CHECK(rig.fake->engine().config().minBytesPerCall == 0);
}

TEST_CASE("a process that exits mid-run is dropped and counted, never a crash") {
  Rig rig;
  rig.tick(1);
  rig.fake->kernel().exitPid(kPid);
  fs::remove_all(rig.root.string() + "/proc/" + std::to_string(kPid));
  TickReport r = rig.tick(2);
  CHECK(r.workloads[0].pids == 0);
  CHECK(rig.engine->totals().vanishedPids == 1);
  REQUIRE(rig.sourceStopped.size() == 1);
  CHECK(*rig.sourceStopped.front());
  CHECK(rig.tick(3).promotedBytes == 0);
}

TEST_CASE("a process exiting between the scope pass and locate is counted gone, not reported") {
  // A forking server's short-lived workers: the scope saw the worker, its smaps and status are
  // gone a moment later. That is a process gone (vanishedPids), not a locate or status error.
  Rig rig;
  readEveryTick(rig);  // tick 2 reads smaps although tick 1's moves placed every page
  rig.tick(1);
  rig.beforeSmaps = [&](pid_t pid) {
    if (pid != kPid) return;
    rig.fake->kernel().exitPid(kPid);
    fs::remove_all(rig.root.string() + "/proc/" + std::to_string(kPid));
  };
  TickReport r = rig.tick(2);
  for (const std::string& p : r.problems)
    CHECK_MESSAGE(p.find(std::to_string(kPid)) == std::string::npos, p);
  CHECK(rig.engine->totals().locateErrors == 0);
  CHECK(rig.engine->totals().statusErrors == 0);
  CHECK(r.promotedBytes == 0);
  rig.beforeSmaps = nullptr;
  CHECK(rig.tick(3).workloads[0].pids == 0);
  CHECK(rig.engine->totals().vanishedPids == 1);
}

TEST_CASE("a process exiting between planning and moving is survived") {
  Rig rig;
  rig.hooked->beforeExecute = [&] { rig.fake->kernel().exitPid(kPid); };
  auto r = rig.engine->tick(1 * kSecond, INT64_MAX, nullptr);
  REQUIRE(r.ok());
  CHECK(rig.hooked->executes == 1);
  REQUIRE_FALSE(r->batch.ranges.empty());
  for (const RangeResult& rr : r->batch.ranges) {
    CHECK(rr.dropped);
    CHECK(rr.bytesMoved == 0);
  }
  CHECK(r->promotedBytes == 0);
  CHECK(rig.regionsOn(kStranger, 1) == 32);
  // The next tick no longer sees the process (its /proc entry is gone too) and goes on.
  fs::remove_all(rig.root.string() + "/proc/" + std::to_string(kPid));
  CHECK(rig.tick(2).workloads[0].pids == 0);
}

TEST_CASE("a named anonymous mapping ([anon:NAME], prctl PR_SET_VMA_ANON_NAME) is managed") {
  sys::SmapsVma named;
  named.start = kBase;
  named.end = kBase + 4 * kMiB;
  named.perms = "rw-p";
  named.path = "[anon:jemalloc]";
  named.kernelPageSize = 4096;
  named.anonHugePages = 4 * kMiB;
  sys::SmapsVma shared = named;
  shared.start = named.end;
  shared.end = named.end + 4 * kMiB;
  shared.perms = "rw-s";
  shared.path = "[anon_shmem:x]";
  auto m = managedMappings({named, shared}, 4096, 2 * kMiB);
  REQUIRE(m.size() == 1);
  CHECK(m[0].start == kBase);
  CHECK(m[0].pageSize == 2 * kMiB);
}

TEST_CASE("a pid that names another process by the time of the move is never touched") {
  Rig rig;
  // After planning: the process exits and its pid goes to a new process (a later start time)
  // whose memory sits at the same addresses on the slow node; the model kernel answers for the
  // new process from then on (FakePageSystem::reusePid).
  auto heatAt = [&](uint64_t nowNs) {
    double h = 0;
    for (const policy::RegionView& v : rig.engine->heat().regions(0, nowNs))
      if (v.pid == kPid && v.start == kBase) h = v.heat;
    return h;
  };
  double oldHeat = 0;  // the old process's: one tick of samples
  rig.hooked->beforeExecute = [&] {
    oldHeat = heatAt(1 * kSecond);
    rig.process(kPid, "tierd-gups", "/usr/bin/tierd-gups", 2000);
    auto& k = rig.fake->kernel();
    k.reusePid(kPid);
    k.map(kPid, kBase, kTable, migrate::FakeBacking::Thp);
    k.populate(kPid, kBase, kTable, 1);
  };
  auto r = rig.engine->tick(1 * kSecond, INT64_MAX, nullptr);
  REQUIRE(r.ok());
  CHECK(rig.hooked->executes == 1);
  REQUIRE_FALSE(r->batch.ranges.empty());
  for (const RangeResult& rr : r->batch.ranges) {
    CHECK(rr.dropped);
    CHECK(rr.bytesMoved == 0);
  }
  CHECK(rig.regionsOn(kPid, 1) == 32);
  CHECK(rig.engine->totals().identityChecksFailed >= 1);

  // The next tick sees the pid's new start time: a new process, the old one's source stopped.
  TickReport next = rig.tick(2);
  CHECK(rig.engine->totals().pidReuses == 1);
  REQUIRE(rig.sourceStopped.size() == 2);
  CHECK(*rig.sourceStopped.front());
  CHECK_FALSE(*rig.sourceStopped.back());
  CHECK(next.workloads[0].pids == 1);
  // The new process (it runs tierd-gups too: in scope by command) starts from its own samples:
  // one tick's worth, as the old one had after its first tick; the old heat is not added.
  REQUIRE(oldHeat > 0);
  CHECK(heatAt(2 * kSecond) == doctest::Approx(oldHeat));
  CHECK(std::count_if(next.scopeChanges.begin(), next.scopeChanges.end(), [](const std::string& c) {
          return c.find(
                     "workload 'gups': pid 4242 gone (exited, its pid now names "
                     "another process) after 32 samples") == 0;
        }) == 1);
  CHECK(std::count(next.scopeChanges.begin(), next.scopeChanges.end(),
                   "workload 'gups': pid 4242 in scope (start time 2000, sampled by scripted)") ==
        1);
}

TEST_CASE("a cgroup branch deeper than the limit is said once and the workload keeps the rest") {
  Rig rig("[[workload]]\nname = \"deep\"\ncgroup = \"/deep.slice\"\n");
  rig.put("/proc/self/mountinfo",
          "23 1 0:21 / / rw - ext4 /dev/vda rw\n"
          "41 23 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
  std::string dir = "/sys/fs/cgroup/deep.slice";
  rig.put(dir + "/cgroup.procs", std::to_string(kStranger) + "\n");
  for (int level = 1; level <= scope::kMaxCgroupDepth + 1; ++level) {
    dir += "/d";
    rig.put(dir + "/cgroup.procs", "");
  }
  auto said = [](const TickReport& r) {
    return std::count_if(r.problems.begin(), r.problems.end(), [](const std::string& p) {
      return p.find("workload 'deep': 1 cgroup(s) more than 64 levels below ") == 0;
    });
  };
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.workloads.size() == 2);
  CHECK(t1.workloads[1].pids == 1);
  CHECK(rig.engine->workloadOf(kStranger) == "deep");
  CHECK(said(t1) == 1);
  CHECK(rig.engine->totals().scopeErrors == 0);
  TickReport t2 = rig.tick(2);
  CHECK(t2.workloads[1].pids == 1);
  CHECK(said(t2) == 0);  // not again while it lasts
}

TEST_CASE("a command process that execs another executable before the move is never touched") {
  Rig rig;
  // After planning: the process execs /usr/bin/other. Pid, start time and pidfd stay the same;
  // only /proc/PID/exe tells. (The model kernel keeps its pages, so a move would show.)
  rig.hooked->beforeExecute = [&] { rig.process(kPid, "other", "/usr/bin/other", 1000); };
  auto r = rig.engine->tick(1 * kSecond, INT64_MAX, nullptr);
  REQUIRE(r.ok());
  CHECK(rig.hooked->executes == 1);
  REQUIRE_FALSE(r->batch.ranges.empty());
  for (const RangeResult& rr : r->batch.ranges) {
    CHECK(rr.dropped);
    CHECK(rr.bytesMoved == 0);
  }
  CHECK(rig.regionsOn(kPid, 1) == 32);
  CHECK(rig.engine->totals().identityChecksFailed >= 1);
  // The next scope pass no longer matches it: dropped.
  TickReport next = rig.tick(2);
  CHECK(next.workloads[0].pids == 0);
  CHECK(rig.engine->workloadOf(kPid).empty());
}

TEST_CASE("a command process that execs another executable that also matches starts afresh") {
  Rig rig;
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.workloads[0].pids == 1);
  // Between ticks it execs /opt/tierd-gups (same file name: the selector still matches it).
  rig.process(kPid, "tierd-gups", "/opt/tierd-gups", 1000);
  TickReport t2 = rig.tick(2);
  CHECK(t2.workloads[0].pids == 1);
  CHECK(std::count_if(t2.scopeChanges.begin(), t2.scopeChanges.end(), [](const std::string& c) {
          return c.find("workload 'gups': pid 4242 gone (exec'd another executable)") == 0;
        }) == 1);
  CHECK(std::count(t2.scopeChanges.begin(), t2.scopeChanges.end(),
                   "workload 'gups': pid 4242 in scope (start time 1000, sampled by scripted)") ==
        1);
  REQUIRE(rig.sourceStopped.size() == 2);
  CHECK(*rig.sourceStopped.front());
  // Held to the new executable: its moves go ahead.
  rig.hooked->beforeExecute = {};
  TickReport t3 = rig.tick(3);
  CHECK(t3.workloads[0].pids == 1);
  CHECK(rig.engine->totals().identityChecksFailed == 0);
}

TEST_CASE("a pid of a pids selector taken by a new process: a pid reuse, dropped, never moved") {
  Rig rig("[[workload]]\nname = \"pinned\"\npids = [4343]\n");
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.workloads.size() == 2);
  CHECK(t1.workloads[1].pids == 1);
  CHECK(rig.engine->workloadOf(kStranger) == "pinned");
  // Between ticks the process exits and a new one gets its pid, memory at the same addresses.
  rig.process(kStranger, "other", "/usr/bin/other", 3000);
  auto& k = rig.fake->kernel();
  k.reusePid(kStranger);
  k.map(kStranger, kBase, kTable, migrate::FakeBacking::Thp);
  k.populate(kStranger, kBase, kTable, 1);
  TickReport t2 = rig.tick(2);
  CHECK(t2.workloads[1].pids == 0);  // the selector named the process that exited
  CHECK(rig.engine->totals().pidReuses == 1);
  CHECK(rig.engine->workloadOf(kStranger) == "");
  // 64 = 2 x 32: its scripted source samples "itself" and "the stranger", both pid 4343.
  CHECK(std::count(t2.scopeChanges.begin(), t2.scopeChanges.end(),
                   "workload 'pinned': pid 4343 gone (exited, its pid now names another process) "
                   "after 64 samples; its heat and plans dropped (1 gone so far)") == 1);
  for (const policy::RegionView& v : rig.engine->heat().regions(1, 2 * kSecond))
    CHECK(v.pid != kStranger);
  for (uint64_t s = 3; s <= 6; ++s)
    rig.tick(s);
  CHECK(rig.regionsOn(kStranger, 1) == 32);  // the new holder's pages never moved
  CHECK(rig.engine->totals().pidReuses == 1);
}

TEST_CASE("a workload whose selector matches nothing says so, once") {
  Rig rig;
  fs::remove_all(rig.root.string() + "/proc/" + std::to_string(kPid));
  auto said = [](const TickReport& r) {
    return problemsSaying(r, "workload 'gups': selector matches no process");
  };
  CHECK(said(rig.tick(1)) == 1);
  CHECK(said(rig.tick(2)) == 0);
  rig.process(kPid, "tierd-gups", "/usr/bin/tierd-gups", 1000);
  CHECK(rig.tick(3).workloads[0].pids == 1);
  fs::remove_all(rig.root.string() + "/proc/" + std::to_string(kPid));
  CHECK(said(rig.tick(4)) == 1);
}

TEST_CASE("a source that failed is tried again, backing off, until it starts") {
  Rig rig;
  rig.failSources = 2;
  TickReport t1 = rig.tick(1);  // fails; next try after 1 s
  CHECK(rig.engine->totals().sourceErrors == 1);
  CHECK(t1.samples == 0);
  rig.tick(2);  // retried: fails again; next try after 2 s
  CHECK(rig.engine->totals().sourceRetries == 1);
  CHECK(rig.engine->totals().sourceErrors == 2);
  rig.tick(3);  // still backing off
  CHECK(rig.engine->totals().sourceRetries == 1);
  TickReport t4 = rig.tick(4);  // retried: starts
  CHECK(rig.engine->totals().sourceRetries == 2);
  CHECK(rig.sourceStopped.size() == 1);
  CHECK(t4.samples == 4 * 8);
}

TEST_CASE(
    "between ticks every source collects, and a collect failure is reported once, by the tick") {
  Rig rig;
  rig.tick(1);
  REQUIRE(rig.sourceCollect.size() == 1);
  rig.engine->collectSamples();
  rig.engine->collectSamples();
  CHECK(rig.sourceCollect[0]->calls == 2);
  rig.sourceCollect[0]->fail = true;
  rig.engine->collectSamples();
  rig.engine->collectSamples();
  TickReport t2 = rig.tick(2);
  CHECK(rig.engine->totals().sourceErrors == 1);
  REQUIRE(t2.problems.size() == 1);
  CHECK(t2.problems[0].find("collect: ") != std::string::npos);
  CHECK(t2.problems[0].find("ring corrupt") != std::string::npos);
  CHECK(t2.samples == 4 * 8);  // the tick's drain still ran
  TickReport t3 = rig.tick(3);
  CHECK(t3.problems.empty());
}

TEST_CASE("auto sampling on a PEBS host: byte-exact PEBS records of a tick promote in the model") {
  // The daemon's own choice and factory: a Sapphire Rapids PMU in the tree, auto sampling.
  // libpfm4 encodes events of a PMU this machine lacks only when asked to (LIBPFM_ENCODE_INACTIVE).
  ::setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
  telemetry::testing::FakePerfEventOpener opener;
  std::unique_ptr<telemetry::SysRootDamonFs> damonFs;
  telemetry::SamplingProbe probe;
  std::string chosen, why;
  Rig* self = nullptr;
  Rig rig("", "qemu-2node", 1,
          [&](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
            telemetry::SamplingTarget target;
            target.pid = pid;
            return telemetry::makeSource(chosen, probe, target, opener, *damonFs,
                                         sys::SysRoot(self->root.string()));
          });
  self = &rig;
  rig.put("/proc/cpuinfo",
          "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\n");
  rig.put("/proc/sys/kernel/perf_event_paranoid", "-1\n");
  rig.put("/sys/bus/event_source/devices/cpu/type", "4\n");
  rig.put("/sys/bus/event_source/devices/software/type", "1\n");
  rig.put("/proc/" + std::to_string(kPid) + "/task/" + std::to_string(kPid) + "/stat", "");
  {
    std::ostringstream maps;
    maps << std::hex << kBase << "-" << kBase + kTable << " rw-p 00000000 00:00 0 \n";
    rig.put("/proc/" + std::to_string(kPid) + "/maps", maps.str());
  }
  const sys::SysRoot root(rig.root.string());
  damonFs = std::make_unique<telemetry::SysRootDamonFs>(root);
  probe = telemetry::probeSampling(root, *damonFs, true);
  chosen = daemon::chooseSource(rig.engine->config(), probe, why);
  INFO(std::string(probe.sources.at(0).name + ": " + probe.sources.at(0).why));
  REQUIRE(chosen == "perf-pebs");  // before: damon-vaddr, auto never picked the PMU

  rig.tick(1);  // opens the PEBS events (one per event and thread) of the scoped process
  REQUIRE(opener.opens.size() == probe.sources.at(0).events.size());
  for (const auto& o : opener.opens) {
    CHECK(o.pid == kPid);
    CHECK(o.cpu == -1);
    CHECK(unsigned(o.attr.precise_ip) > 0u);
  }
  REQUIRE(opener.rings.at(0));
  // What the kernel writes for a load-latency PEBS sample: 8 loads in each of 4 regions.
  const uint64_t st = opener.opens[0].attr.sample_type;
  telemetry::testing::SampleFields f;
  f.pid = f.tid = static_cast<uint32_t>(kPid);
  f.time = 1 * kSecond + 1;
  f.weight = 300;
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 8; ++i) {
      f.addr = kBase + r * 2 * kMiB + i * 4096;
      opener.rings[0]->write(telemetry::testing::sampleRecord(st, f));
    }
  TickReport t2 = rig.tick(2);
  CHECK(t2.samples == 32);
  for (uint64_t s = 3; s <= 5; ++s)
    rig.tick(s);
  for (int r = 0; r < 4; ++r)
    CHECK(rig.fake->kernel().nodeOf(kPid, kBase + r * 2 * kMiB) == 0);
  CHECK(rig.regionsOn(kPid, 0) == 4);
  CHECK(rig.regionsOn(kStranger, 1) == 32);
}

TEST_CASE("on a two-socket CXL host, a socket-1 task's hot pages go to socket-1 DRAM") {
  Rig rig("", "2socket-cxl", /*startNode=*/3);  // CXL behind socket 1
  rig.status(kPid, "32-63", "0-3");             // runs on socket 1 (node 1's cpulist)
  for (uint64_t s = 1; s <= 3; ++s)
    rig.tick(s);
  // Nodes 0 and 1 have the same free memory: by free space alone node 0 won.
  CHECK(rig.regionsOn(kPid, 1) == 4);
  CHECK(rig.regionsOn(kPid, 0) == 0);
}

TEST_CASE("a task whose cpuset.mems excludes the fast node is not moved, and it is said once") {
  Rig rig;
  rig.status(kPid, "0-63", "1");  // a container pinned to the slow node
  rig.fake->kernel().setMemsAllowed(kPid, {1});
  TickReport first = rig.tick(1);
  TickReport second = rig.tick(2);
  CHECK(rig.hooked->executes == 0);  // never a move_pages call that fails with -EACCES
  CHECK(first.arbiter.skippedNotAllowed == 4);
  CHECK(second.arbiter.skippedNotAllowed == 4);
  auto said = [](const TickReport& r) {
    return problemsSaying(r, "cpuset.mems 1 excludes every fast node");
  };
  CHECK(said(first) == 1);
  CHECK(said(second) == 0);
  CHECK(rig.regionsOn(kPid, 1) == 32);
}

TEST_CASE("a reload that renames a workload forgets what was said of its processes") {
  Rig rig;
  rig.status(kPid, "0-63", "1");
  rig.fake->kernel().setMemsAllowed(kPid, {1});
  auto said = [](const TickReport& r) {
    return problemsSaying(r, "cpuset.mems 1 excludes every fast node");
  };
  CHECK(said(rig.tick(1)) == 1);
  CHECK(said(rig.tick(2)) == 0);
  // The same process under a workload of another name: a new workload instance, whose
  // placement is said afresh, as it would be for a process new to the scope.
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->workloads[0].name = "gups-renamed";
  rig.engine->setConfig(cfg);
  TickReport renamed = rig.tick(3);
  CHECK(said(renamed) == 1);
  CHECK(std::any_of(
      renamed.scopeChanges.begin(), renamed.scopeChanges.end(), [](const std::string& c) {
        return c.find("workload 'gups-renamed': pid " + std::to_string(kPid) + " in scope") !=
               std::string::npos;
      }));
  CHECK(said(rig.tick(4)) == 0);
}

TEST_CASE("a move refused for the cpuset (node_not_allowed) backs the range off") {
  Rig rig;
  // status still says 0-3 (read before a cpuset write), the kernel already refuses node 0.
  rig.fake->kernel().setMemsAllowed(kPid, {1});
  TickReport first = rig.tick(1);
  REQUIRE(rig.hooked->executes == 1);
  CHECK(first.batch.ranges.size() == 4);
  CHECK(rig.engine->heat().recordStats().notAllowed == 4);
  rig.tick(2);
  CHECK(rig.hooked->executes == 1);  // within the back-off: not planned again
  CHECK(rig.regionsOn(kPid, 1) == 32);
}

TEST_CASE("THP promotions are bounded by the target's free 2 MiB blocks in /proc/buddyinfo") {
  Rig rig("", "2socket-cxl", /*startNode=*/3);
  rig.status(kPid, "32-63", "0-3");
  // Node 1 is fragmented: 2 free order-9 blocks, nothing bigger; node 0 has none at all.
  rig.put("/proc/buddyinfo",
          "Node 0, zone   Normal  90000  40000  20000  9000  4000  2000  900  300  80  0  0\n"
          "Node 1, zone   Normal  90000  40000  20000  9000  4000  2000  900  300  80  2  0\n"
          "Node 2, zone  Movable      0      0      0     0     0     0    0    0   0  0  900\n"
          "Node 3, zone  Movable      0      0      0     0     0     0    0    0   0  0  900\n");
  TickReport first = rig.tick(1);
  CHECK(first.topology.node(1)->freePmdBlockBytes == 2 * 2 * kMiB);
  CHECK(rig.regionsOn(kPid, 1) == 2);  // the other two would have been split by the kernel
  CHECK(rig.regionsOn(kPid, 0) == 0);
  CHECK(first.arbiter.skippedNoRoom == 2);
}

TEST_CASE("a THP that comes back split after its move is counted") {
  Rig rig;
  TickReport first = rig.tick(1);
  REQUIRE(first.promotedBytes == 4 * 2 * kMiB);
  // The kernel split one of the moved THPs (e.g. no free 2 MiB block on the target).
  rig.fake->kernel().splitThp(kPid, kBase + 2 * kMiB);
  CHECK(rig.fake->kernel().nodeOf(kPid, kBase + 2 * kMiB + 4096) == 0);
  // Every moved page was on node 0 by move_pages' answer: tick 2 keeps tick 1's full read, and
  // the split is seen at the next full read, daemon.full_locate_interval (10 s) after it.
  TickReport second = rig.tick(2);
  CHECK(second.locatesReused == 1);
  CHECK(second.thpSplitAfterMove == 0);
  TickReport full = rig.tick(11);
  CHECK(full.locatesReused == 0);
  CHECK(full.thpSplitAfterMove == 1);
  CHECK(rig.engine->totals().thpSplitAfterMove == 1);
  CHECK(rig.tick(21).thpSplitAfterMove == 0);  // counted once
}

TEST_CASE("THPs that come back split in two processes of one tick are each counted once") {
  Rig rig;
  rig.process(kStranger, "tierd-gups", "/usr/bin/tierd-gups", 1000);  // a second gups in scope
  TickReport first = rig.tick(1);
  REQUIRE(first.workloads.size() == 1);
  REQUIRE(first.workloads[0].pids == 2);
  REQUIRE(rig.regionsOn(kPid, 0) == 4);
  REQUIRE(rig.regionsOn(kStranger, 0) == 4);
  rig.fake->kernel().splitThp(kPid, kBase + 2 * kMiB);
  rig.fake->kernel().splitThp(kStranger, kBase);
  rig.fake->kernel().splitThp(kStranger, kBase + 2 * kMiB);
  TickReport full = rig.tick(11);  // the next full read of both
  CHECK(full.thpSplitAfterMove == 3);
  CHECK(rig.engine->totals().thpSplitAfterMove == 3);
}

TEST_CASE("the kernel's own tiering running beside tierd: detected, said once, nothing moved") {
  Rig rig;
  auto said = [](const TickReport& r) {
    return problemsSaying(r, "the kernel's own tiering runs");
  };
  rig.put("/proc/sys/kernel/numa_balancing", "2\n");
  TickReport t1 = rig.tick(1);
  CHECK(t1.kernelTiering == "kernel.numa_balancing=2 (NUMA_BALANCING_MEMORY_TIERING)");
  CHECK(t1.kernelTieringHeld);
  CHECK(said(t1) == 1);
  CHECK(t1.plannedPromoteBytes > 0);  // decided, not moved
  CHECK(said(rig.tick(2)) == 0);
  CHECK(rig.hooked->executes == 0);
  CHECK(rig.regionsOn(kPid, 1) == 32);

  // A DAMOS migrate_hot scheme of someone else's kdamond is the kernel's tiering too.
  rig.put("/proc/sys/kernel/numa_balancing", "0\n");
  const std::string kd = "/sys/kernel/mm/damon/admin/kdamonds";
  rig.put(kd + "/nr_kdamonds", "1\n");
  rig.put(kd + "/0/state", "on\n");
  rig.put(kd + "/0/contexts/0/schemes/nr_schemes", "1\n");
  rig.put(kd + "/0/contexts/0/schemes/0/action", "migrate_hot\n");
  TickReport t3 = rig.tick(3);
  CHECK(t3.kernelTiering == "kdamond 0 runs DAMOS migrate_hot");
  CHECK(said(t3) == 1);
  CHECK(rig.hooked->executes == 0);

  // Allowed by the config: tierd moves (and said so once when it started).
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->migration.allowKernelTiering = true;
  rig.engine->setConfig(cfg);
  TickReport t4 = rig.tick(4);
  CHECK_FALSE(t4.kernelTieringHeld);
  CHECK(rig.hooked->executes == 1);
  CHECK(rig.regionsOn(kPid, 0) == 4);

  // Gone: said no more, moves go on.
  rig.put(kd + "/0/state", "off\n");
  CHECK(rig.tick(5).kernelTiering.empty());

  // The same kdamond on again (nr_kdamonds unchanged): seen at the next scan of the schemes,
  // kDamosRescanTicks checks after the last one, and from then on every tick.
  rig.put(kd + "/0/state", "on\n");
  for (uint64_t t = 6; t < 5 + Engine::kDamosRescanTicks; ++t)
    CHECK(rig.tick(t).kernelTiering.empty());
  CHECK(rig.tick(5 + Engine::kDamosRescanTicks).kernelTiering ==
        "kdamond 0 runs DAMOS migrate_hot");
  // A kdamond more (nr_kdamonds changed): scanned at once.
  rig.put(kd + "/0/state", "off\n");
  CHECK(rig.tick(6 + Engine::kDamosRescanTicks).kernelTiering.empty());
  rig.put(kd + "/nr_kdamonds", "2\n");
  rig.put(kd + "/1/state", "on\n");
  rig.put(kd + "/1/contexts/0/schemes/nr_schemes", "1\n");
  rig.put(kd + "/1/contexts/0/schemes/0/action", "migrate_cold\n");
  CHECK(rig.tick(7 + Engine::kDamosRescanTicks).kernelTiering ==
        "kdamond 1 runs DAMOS migrate_cold");
}

TEST_CASE("workload memory: the cgroup's memory.numa_stat, else the processes' numa_maps") {
  // gups (command selector) and a pod (cgroup v2 selector) whose one process is kStranger.
  Rig rig("[[workload]]\nname = \"pod\"\ncgroup = \"/pod.slice\"\n");
  rig.put("/proc/self/mountinfo",
          "23 1 0:21 / / rw - ext4 /dev/vda rw\n"
          "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n");
  rig.put("/sys/fs/cgroup/pod.slice/cgroup.procs", "4343\n");
  rig.put("/sys/fs/cgroup/pod.slice/memory.numa_stat",
          "anon N0=1048576 N1=3145728\nfile N0=8192 N1=4096\nshmem N0=0 N1=0\n");
  // gups: 32 MiB of anonymous THP memory on node 1 and a file mapping on node 0 (numa_maps
  // counts pages present per node; the engine's heat regions cover 64 MiB).
  rig.put("/proc/4242/numa_maps",
          "7f0000000000 default anon=8192 dirty=8192 N1=8192 kernelpagesize_kB=4\n"
          "7f2000000000 default file=/usr/lib/libc.so.6 mapped=10 mapmax=3 N0=10 "
          "kernelpagesize_kB=4\n");
  TickReport r = rig.tick(1);
  REQUIRE(r.workloads.size() == 2);
  const WorkloadReport& gups = r.workloads[0];
  CHECK(gups.memorySource == MemorySource::NumaMaps);
  CHECK(gups.memory.at(1).anon == 32 * kMiB);
  CHECK(gups.memory.at(1).file == 0);
  CHECK(gups.memory.at(0).file == 10 * 4096);
  CHECK(gups.slowBytes + gups.fastBytes == kTable);  // the regions, not what is resident
  const WorkloadReport& pod = r.workloads[1];
  REQUIRE(pod.pids == 1);
  CHECK(pod.memorySource == MemorySource::NumaStat);
  CHECK(pod.memory.at(0).anon == 1 * kMiB);
  CHECK(pod.memory.at(1).anon == 3 * kMiB);
  CHECK(pod.memory.at(0).file == 8192);
  CHECK(pod.memory.at(1).file == 4096);
}

TEST_CASE("the cgroup mounts are read only when a workload has a cgroup selector") {
  auto mountProblems = [](const TickReport& r) {
    return std::count_if(r.problems.begin(), r.problems.end(),
                         [](const std::string& p) { return p.rfind("cgroup mounts: ", 0) == 0; });
  };
  // A mountinfo that cannot be parsed: reading it is a problem of the tick.
  const std::string broken = "not a mountinfo line\n";
  Rig byCommand;  // gups by command only
  byCommand.put("/proc/self/mountinfo", broken);
  TickReport c = byCommand.tick(1);
  CHECK(mountProblems(c) == 0);
  CHECK(c.workloads.at(0).pids == 1);
  Rig withPod("[[workload]]\nname = \"pod\"\ncgroup = \"/pod.slice\"\n");
  withPod.put("/proc/self/mountinfo", broken);
  TickReport p = withPod.tick(1);
  CHECK(mountProblems(p) == 1);
  CHECK(p.workloads.at(0).pids == 1);  // gups resolved all the same
}

TEST_CASE("regionNodes: each region goes to the node with most of its present bytes") {
  const uint64_t a = kBase, b = kBase + 8 * kMiB, h = kBase + 2 * kGiB;
  const std::vector<policy::Mapping> mappings = {
      {a, a + 4 * kMiB, 2 * kMiB, false},  // THP
      {b, b + 4 * kMiB, 4096, false},      // base pages
      {h, h + 2 * kGiB, kGiB, true},       // hugetlb, 1 GiB pages: 1 GiB regions
  };
  const std::vector<LocatedRun> runs = {
      {h + kGiB, kGiB, kGiB, 0},                   // second 1 GiB page on node 0
      {a, 2 * kMiB, 2 * kMiB, 1},                  // region a on node 1
      {a + 2 * kMiB, 1 * kMiB, 4096, 0},           // region a+2M: half on 0 ...
      {a + 3 * kMiB, 1 * kMiB, 4096, 1},           // ... half on 1: a tie, the lower id
      {b, 4096, 4096, 0},                          // region b: 1 page on 0 ...
      {b + 4096, 2 * kMiB - 4096, 4096, -ENOENT},  // ... the rest not present
      {b + 2 * kMiB, 2 * kMiB, 4096, -EFAULT},     // region b+2M: nothing present
      {h, kGiB, kGiB, 1},                          // first 1 GiB page on node 1
  };
  const std::vector<std::pair<uint64_t, NodeId>> want = {
      {a, 1}, {a + 2 * kMiB, 0}, {b, 0}, {h, 1}, {h + kGiB, 0}};
  CHECK(regionNodes(mappings, runs) == want);
  // The same answer whatever order smaps had.
  const std::vector<policy::Mapping> shuffled = {mappings[2], mappings[0], mappings[1]};
  CHECK(regionNodes(shuffled, runs) == want);
}

TEST_CASE("regionNodes looks up each run's mapping by bisection, not by scanning every mapping") {
  // 4096 THP mappings with a 2 MiB hole between each, one run per mapping (a process with many
  // VMAs): a scan per run would compare 4096 x 4096 mappings.
  constexpr uint64_t kMappings = 4096;
  std::vector<policy::Mapping> mappings;
  std::vector<LocatedRun> runs;
  for (uint64_t i = 0; i < kMappings; ++i) {
    const uint64_t s = kBase + i * 4 * kMiB;
    mappings.push_back({s, s + 2 * kMiB, 2 * kMiB, false});
    runs.push_back({s, 2 * kMiB, 2 * kMiB, static_cast<int>(i % 2)});
  }
  uint64_t probes = 0;
  const auto nodes = regionNodes(mappings, runs, &probes);
  REQUIRE(nodes.size() == kMappings);
  CHECK(nodes[1] == std::pair<uint64_t, NodeId>{kBase + 4 * kMiB, 1});
  // log2(4096) = 12: at most 13 comparisons per run.
  CHECK(probes <= 13 * kMappings);
}

TEST_CASE(
    "a tick reads each scoped process's smaps and numa_maps once: locate, the resident memory "
    "and the moves use that read") {
  Rig rig;
  readEveryTick(rig);
  const migrate::FakePageSystem& k = rig.fake->kernel();
  for (uint64_t s = 1; s <= 2; ++s) {  // full_locate_interval "0s": a full read every tick
    const uint64_t before = k.smapsReads();
    const uint64_t numaBefore = k.numaMapsReads();
    TickReport r = rig.tick(s);
    CHECK(k.smapsReads() - before == 1);
    CHECK(k.numaMapsReads() - numaBefore == 1);
    REQUIRE(r.workloads.size() == 1);
    CHECK(r.workloads[0].memory.at(s == 1 ? 1 : 0).anon > 0);  // read from it
    if (s == 1) CHECK(r.promotedBytes == 4 * 2 * kMiB);  // moved, planned on the engine's read
  }
  // The hot regions are split from the cold ones across two nodes now: locate needed smaps.
  CHECK(rig.regionsOn(kPid, 0) == 4);
}

TEST_CASE(
    "locate: reused while maps is unchanged and tierd's moves placed every page, read after a "
    "move that did not, a new layout, or full_locate_interval") {
  Rig rig;  // daemon.full_locate_interval: 10 s, the default
  migrate::FakePageSystem& k = rig.fake->kernel();
  TickReport t1 = rig.tick(1);  // the first read; promotes the 4 hot regions
  CHECK(t1.locatesReused == 0);
  REQUIRE(t1.promotedBytes == 4 * 2 * kMiB);
  REQUIRE(t1.workloads.size() == 1);
  const std::map<NodeId, NodeMemory> read1 = t1.workloads[0].memory;
  uint64_t reads = k.smapsReads();
  const uint64_t numaReads = k.numaMapsReads();
  uint64_t queries = k.log().size();
  // Every page of tick 1's moves is on node 0 by move_pages' answer: the full read stays, with
  // the moved bytes shifted from node 1 to node 0 in the resident memory per node.
  TickReport t2 = rig.tick(2);
  CHECK(t2.locatesReused == 1);
  CHECK(k.smapsReads() == reads);
  CHECK(k.numaMapsReads() == numaReads);
  CHECK(k.log().size() == queries);
  REQUIRE(t2.promotedBytes + t2.demotedBytes == 0);  // settled: nothing moves from here on
  CHECK(t2.workloads[0].fastBytes == 4 * 2 * kMiB);
  CHECK(read1.count(0) == 0);  // everything started on node 1
  CHECK(t2.workloads[0].memory.at(0).anon == 4 * 2 * kMiB);
  CHECK(t2.workloads[0].memory.at(1).anon == read1.at(1).anon - 4 * 2 * kMiB);
  // ... and equals what a full read finds (forced by a reload to "0s": every tick).
  {
    Rig fresh;
    readEveryTick(fresh);
    fresh.tick(1);
    TickReport f2 = fresh.tick(2);
    CHECK(f2.locatesReused == 0);
    for (NodeId n : {0, 1}) {
      CHECK(f2.workloads[0].memory.at(n).anon == t2.workloads[0].memory.at(n).anon);
      CHECK(f2.workloads[0].memory.at(n).file == t2.workloads[0].memory.at(n).file);
    }
    CHECK(f2.workloads[0].fastBytes == t2.workloads[0].fastBytes);
  }
  for (uint64_t s = 3; s <= 10; ++s) {
    TickReport t = rig.tick(s);
    CHECK(t.locatesReused == 1);
    REQUIRE(t.workloads.size() == 1);
    CHECK(t.workloads[0].fastBytes == 4 * 2 * kMiB);  // the heat model kept the locations
  }
  CHECK(k.smapsReads() == reads);    // nine ticks without a walk of the page tables
  CHECK(k.log().size() == queries);  // nor a location query
  CHECK(rig.engine->totals().locatesReused == 9);
  CHECK(rig.tick(11).locatesReused == 0);  // 10 s after the last full read
  CHECK(k.smapsReads() - reads == 1);
  TickReport t12 = rig.tick(12);
  CHECK(t12.locatesReused == 1);

  // A new mapping shows in /proc/PID/maps: read at once.
  k.map(kPid, kBase + 2 * kTable, 4 * kMiB, migrate::FakeBacking::Thp);
  k.populate(kPid, kBase + 2 * kTable, 4 * kMiB, 1);
  TickReport t13 = rig.tick(13);
  CHECK(t13.locatesReused == 0);
  CHECK(t13.workloads[0].slowBytes == kTable - 4 * 2 * kMiB + 4 * kMiB);

  // A page the kernel moved by itself, in an unchanged layout, is seen at the next full read
  // (here forced by a reload to "0s": every tick).
  k.populate(kPid, kBase + 20 * 2 * kMiB, 2 * kMiB, 0);
  TickReport t14 = rig.tick(14);
  CHECK(t14.locatesReused == 1);
  CHECK(t14.workloads[0].fastBytes == 4 * 2 * kMiB);  // not seen yet
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->daemon.fullLocateIntervalNs = 0;
  rig.engine->setConfig(cfg);
  TickReport t15 = rig.tick(15);
  CHECK(t15.locatesReused == 0);
  CHECK(t15.workloads[0].fastBytes == 5 * 2 * kMiB);
}

TEST_CASE(
    "locate: holes a move found not present keep the full read, a region with none is queried "
    "alone") {
  Rig rig;
  migrate::FakePageSystem& k = rig.fake->kernel();
  // Two pages of the second hot region freed before the first read (an allocator's holes), and
  // every page of the third freed after it: the move finds the first not present, as the read
  // did, and nothing at all of the third.
  k.dropPage(kPid, kBase + 2 * kMiB + 8 * kKiB);
  k.dropPage(kPid, kBase + 2 * kMiB + 64 * kKiB);
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.promotedBytes == 4 * 2 * kMiB - 2 * 4 * kKiB);
  const uint64_t reads = k.smapsReads();
  TickReport t2 = rig.tick(2);
  CHECK(t2.locatesReused == 1);
  CHECK(k.smapsReads() == reads);
  CHECK(t2.workloads[0].fastBytes == 4 * 2 * kMiB);  // regions, holes included
  // A region whose every page went since the read: queried again after the move that finds it so.
  for (uint64_t a = kBase + 10 * kMiB; a < kBase + 12 * kMiB; a += 4 * kKiB)
    k.dropPage(kPid, a);
  *rig.hotRegions = 6;  // regions 4 and 5 get hot: 5 ([10, 12) MiB) has no page left
  const uint64_t numaReads = k.numaMapsReads();
  TickReport t3 = rig.tick(3);
  CHECK(t3.locatesReused == 1);
  CHECK(t3.rangesRelocated == 0);
  CHECK(t3.promotedBytes == 2 * kMiB);  // region 4 only
  TickReport t4 = rig.tick(4);
  CHECK(t4.locatesReused == 1);
  CHECK(t4.rangesRelocated == 1);
  CHECK(k.numaMapsReads() == numaReads);  // no full read (smaps: the migrator's own, per move)
}

TEST_CASE(
    "locate: a tick that reuses the read moves base pages on the read's layout, without an smaps "
    "walk") {
  Rig rig;
  migrate::FakePageSystem& k = rig.fake->kernel();
  // The table in 4 KiB pages (a redis heap: THP off): a walk of its page tables costs per page.
  k.unmap(kPid, kBase, kTable);
  k.map(kPid, kBase, kTable, migrate::FakeBacking::Base);
  k.populate(kPid, kBase, kTable, 1);
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.promotedBytes == 4 * 2 * kMiB);
  const uint64_t smaps = k.smapsReads(), numa = k.numaMapsReads();
  *rig.hotRegions = 6;  // regions 4 and 5 get hot
  TickReport t2 = rig.tick(2);
  CHECK(t2.locatesReused == 1);
  CHECK(t2.promotedBytes == 2 * 2 * kMiB);
  CHECK(k.smapsReads() == smaps);  // planned on tick 1's read: no walk by the migrator either
  CHECK(k.numaMapsReads() == numa);
  CHECK(rig.regionsOn(kPid, 0) == 6);
  for (uint64_t a = kBase + 8 * kMiB; a < kBase + 12 * kMiB; a += 4 * kKiB)
    REQUIRE(k.nodeOf(kPid, a) == 0);
  // The next full read finds what the moves said.
  readEveryTick(rig);
  TickReport t3 = rig.tick(3);
  CHECK(t3.locatesReused == 0);
  CHECK(t3.workloads[0].fastBytes == 6 * 2 * kMiB);
}

TEST_CASE("locate: a move that left a page busy has its range queried alone on the next tick") {
  Rig rig;
  migrate::FakePageSystem& k = rig.fake->kernel();
  // The second hot THP answers -EBUSY to every move (the migrator's retries included).
  k.scriptPageError(kPid, kBase + 2 * kMiB, EBUSY);
  TickReport t1 = rig.tick(1);
  REQUIRE(t1.promotedBytes == 3 * 2 * kMiB);
  REQUIRE(t1.workloads.size() == 1);
  CHECK(t1.rangesRelocated == 0);
  const uint64_t smaps = k.smapsReads(), numa = k.numaMapsReads(), maps = k.mapsReads();
  // Where the busy page is now only the kernel knows: here it moved it by itself since.
  k.populate(kPid, kBase + 2 * kMiB, 2 * kMiB, 0);
  TickReport t2 = rig.tick(2);
  CHECK(t2.locatesReused == 1);
  CHECK(t2.rangesRelocated == 1);
  CHECK(k.smapsReads() == smaps);  // no walk of the process: neither smaps nor numa_maps
  CHECK(k.numaMapsReads() == numa);
  CHECK(k.mapsReads() - maps == 1);                  // the layout check of the reuse alone
  CHECK(t2.workloads[0].fastBytes == 4 * 2 * kMiB);  // the query's answer, not the model's guess
  CHECK(t2.promotedBytes == 0);
  CHECK(rig.engine->totals().rangesRelocated == 1);
  // Queried once: the next tick reuses the read with nothing queued.
  TickReport t3 = rig.tick(3);
  CHECK(t3.locatesReused == 1);
  CHECK(t3.rangesRelocated == 0);
  CHECK(k.smapsReads() == smaps);
}

TEST_CASE("locate: ranges a stop left unreached keep the full read, and their pages stayed") {
  Rig rig;
  migrate::FakePageSystem& k = rig.fake->kernel();
  // A stop (SIGTERM) raised as the migration step begins: no range is reached.
  std::atomic<bool> stop{false};
  rig.hooked->beforeExecute = [&stop] { stop = true; };
  auto r1 = rig.engine->tick(1 * kSecond, INT64_MAX, &stop);
  REQUIRE(r1.ok());
  const TickReport& t1 = r1.value();
  CHECK(t1.promotedBytes == 0);
  uint64_t notReached = 0;
  for (const RangeResult& r : t1.batch.ranges)
    notReached += r.outcomes[MoveOutcome::NotAttempted];
  CHECK(notReached == 4);
  rig.hooked->beforeExecute = {};
  const uint64_t reads = k.smapsReads();
  TickReport t2 = rig.tick(2);
  CHECK(t2.locatesReused == 1);
  CHECK(k.smapsReads() - reads <= 1);     // at most the migrator's own read for tick 2's moves
  CHECK(t2.workloads[0].fastBytes == 0);  // before tick 2's own moves
  CHECK(t2.promotedBytes == 4 * 2 * kMiB);
  CHECK(rig.regionsOn(kPid, 0) == 4);  // the kernel's own answer agrees
}

TEST_CASE("policyNodes: where a mapping's memory policy puts its pages") {
  const std::set<NodeId> home = {0};
  CHECK(policyNodes("default", home) == std::set<NodeId>{0});
  CHECK(policyNodes("local", home) == std::set<NodeId>{0});
  CHECK(policyNodes("default", {}) == std::set<NodeId>{});
  CHECK(policyNodes("bind:1-2", home) == std::set<NodeId>{1, 2});
  CHECK(policyNodes("bind=static:1", home) == std::set<NodeId>{1});
  CHECK(policyNodes("prefer:1", home) == std::set<NodeId>{1});
  CHECK(policyNodes("prefer (many):0,2", home) == std::set<NodeId>{0, 2});
  CHECK(policyNodes("interleave:0-1", home) == std::nullopt);
  CHECK(policyNodes("interleave=static:0-3", home) == std::nullopt);
  CHECK(policyNodes("weighted interleave:0-1", home) == std::nullopt);
  CHECK(policyNodes("bind", home) == std::nullopt);       // no node list: not known
  CHECK(policyNodes("mystery:1", home) == std::nullopt);  // a word not known: left
}

// /proc/PID/numa_maps of the test process: its table bound to node 1 (MPOL_BIND).
void bindTableToSlowNode(Rig& rig) {
  char line[160];
  std::snprintf(line, sizeof line,
                "%llx bind:1 anon=16384 dirty=16384 N1=16384 kernelpagesize_kB=4\n",
                static_cast<unsigned long long>(kBase));
  rig.put("/proc/" + std::to_string(kPid) + "/numa_maps", line);
}

TEST_CASE("restore: a bound workload's promoted hot set goes back to its node and stays there") {
  Rig rig;
  uint64_t s = 0;
  while (s < 5)
    rig.tick(++s);
  REQUIRE(rig.regionsOn(kPid, 0) == 4);
  bindTableToSlowNode(rig);
  OperatorHold hold;
  hold.restore["gups"] = 1;
  rig.engine->setHold(hold);
  TickReport r = rig.tick(++s);
  CHECK(rig.regionsOn(kPid, 0) == 0);
  CHECK(r.demotedBytes == 4 * 2 * kMiB);
  CHECK(r.workloads[0].plannedDemoteBytes == 4 * 2 * kMiB);
  CHECK(r.workloads[0].movedBytes == 4 * 2 * kMiB);
  REQUIRE(rig.engine->restores().count("gups"));
  CHECK(rig.engine->restores().at("gups").movedBytes == 4 * 2 * kMiB);
  CHECK_FALSE(rig.engine->restores().at("gups").done);
  rig.tick(++s);
  CHECK(rig.engine->restores().at("gups").done);
  CHECK(rig.engine->restores().at("gups").ticks == 1);
  // Held: the arbiter plans the hot set again, nothing of it moves.
  uint64_t held = 0;
  for (int i = 0; i < 8; ++i)
    held += rig.tick(++s).workloads[0].heldBytes;
  CHECK(held > 0);
  CHECK(rig.regionsOn(kPid, 0) == 0);
  CHECK(rig.regionsOn(kStranger, 1) == 32);  // never touched
  // Resumed: tiered again.
  rig.engine->setHold({});
  CHECK(rig.engine->restores().empty());
  for (int i = 0; i < 10; ++i)
    rig.tick(++s);
  CHECK(rig.regionsOn(kPid, 0) == 4);
}

TEST_CASE("pause holds every plan, and a default-policy workload is restored to its home node") {
  Rig rig;
  OperatorHold hold;
  hold.all = true;
  rig.engine->setHold(hold);
  uint64_t held = 0, s = 0;
  while (s < 5)
    held += rig.tick(++s).workloads[0].heldBytes;
  CHECK(held > 0);
  CHECK(rig.regionsOn(kPid, 0) == 0);
  CHECK(rig.engine->totals().promotedBytes == 0);
  // The fake kernel's numa_maps says "default": local to the task's home node, 0 (the only
  // node with CPUs); a restore runs while paused.
  hold.restore["gups"] = 7;
  rig.engine->setHold(hold);
  for (int i = 0; i < 4 && !rig.engine->restores().at("gups").done; ++i)
    rig.tick(++s);
  CHECK(rig.engine->restores().at("gups").done);
  CHECK(rig.engine->restores().at("gups").request == 7);
  CHECK(rig.regionsOn(kPid, 0) == 32);
  CHECK(rig.regionsOn(kStranger, 1) == 32);
  // A new request number starts the restore again (nothing left to move: done at once).
  hold.restore["gups"] = 8;
  rig.engine->setHold(hold);
  CHECK_FALSE(rig.engine->restores().at("gups").done);
  rig.tick(++s);
  CHECK(rig.engine->restores().at("gups").done);
  CHECK(rig.engine->restores().at("gups").movedBytes == 0);
}

TEST_CASE("restore leaves a direction whose rate is 0 and says how much it left") {
  Rig rig;
  uint64_t s = 0;
  while (s < 5)
    rig.tick(++s);
  REQUIRE(rig.regionsOn(kPid, 0) == 4);
  bindTableToSlowNode(rig);
  auto cfg = std::make_shared<policy::CompiledConfig>(rig.engine->config());
  cfg->migration.maxDemoteMiBPerS = 0;  // demotion off: the restore must not demote either
  rig.engine->setConfig(cfg);
  OperatorHold hold;
  hold.restore["gups"] = 1;
  rig.engine->setHold(hold);
  TickReport r = rig.tick(++s);
  CHECK(r.demotedBytes == 0);
  CHECK(rig.regionsOn(kPid, 0) == 4);
  const RestoreStatus& st = rig.engine->restores().at("gups");
  CHECK(st.blockedBytes == 4 * 2 * kMiB);
  CHECK(st.plannedBytes == 0);
  CHECK(st.done);  // nothing it may move is left
}

#include "tierd/simulate/Simulator.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "policy/PingPong.h"
#include "policy/Policy.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Engine.h"
#include "tierd/daemon/Tuning.h"
#include "tierd/scope/Scope.h"
#include "tierd/simulate/ModelKernelMigrator.h"
#include "tierd/topology/Topology.h"
#include "tierd/topology/TopologyProvider.h"

namespace tierd::daemon {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kRegion = 2 * kMiB;

// Counters the replay sources fill during a tick's drain.
struct DrainCounters {
  uint64_t samples = 0, fastSamples = 0, accesses = 0, fastAccesses = 0;
};

// Replays one pid's samples and classifies each drained sample by the tier its page is on at
// drain time (before the tick's moves). Named after the trace's source and weighing its samples
// as that source does (weightKind), so that the engine weighs DAMON samples exactly as it would
// live.
class ClassifyingReplay final : public telemetry::HotnessSource {
 public:
  ClassifyingReplay(telemetry::Trace trace, const migrate::FakePageSystem& kernel,
                    const std::set<NodeId>& fast, DrainCounters& counters)
      : name_(trace.header.source),
        weight_(telemetry::weightKindOf(trace.header.source)),
        replay_(std::move(trace)),
        kernel_(kernel),
        fast_(fast),
        counters_(counters) {}
  std::string name() const override { return name_; }
  telemetry::WeightKind weightKind() const override { return weight_; }
  Status start() override { return replay_.start(); }
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override {
    auto batch = replay_.drain(untilNs);
    if (!batch) return batch;
    for (const AccessSample& s : batch.value()) {
      const uint64_t weight = weight_ == telemetry::WeightKind::Weighted ? s.weight : 1;
      auto node = kernel_.nodeOf(s.pid, s.vaddr);
      const bool onFast = node && fast_.count(*node) != 0;
      ++counters_.samples;
      counters_.accesses += weight;
      if (onFast) {
        ++counters_.fastSamples;
        counters_.fastAccesses += weight;
      }
    }
    return batch;
  }
  void stop() override { replay_.stop(); }
  telemetry::SourceStats stats() const override { return replay_.stats(); }

 private:
  std::string name_;
  telemetry::WeightKind weight_;
  telemetry::ReplaySource replay_;
  const migrate::FakePageSystem& kernel_;
  const std::set<NodeId>& fast_;
  DrainCounters& counters_;
};

// The simulated machine's migrator with a hook run once at the start of the next execute(): a
// pid reuse lands after the tick's scope scan and plan, before its first move call.
class HookedMigrator final : public migrate::Migrator {
 public:
  explicit HookedMigrator(std::unique_ptr<migrate::ModelKernelMigrator> m) : m_(std::move(m)) {}
  BatchResult execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                      const std::atomic<bool>* stop) override {
    runHook();
    return m_->execute(batch, deadlineNs, stop);
  }
  Result<LocateResult> locate(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return m_->locate(pid, ranges);
  }
  Result<LocateResult> locatePages(pid_t pid, const std::vector<AddressRange>& ranges) override {
    return m_->locatePages(pid, ranges);
  }
  int64_t nowNs() override { return m_->nowNs(); }
  void setProcessCheck(ProcessCheck check) override { m_->setProcessCheck(std::move(check)); }
  void setLimits(const migrate::MigrationLimits& limits) override { m_->setLimits(limits); }
  /// The /proc reads the modelled migrator plans on (ModelKernelMigrator::reads).
  const std::shared_ptr<migrate::ProcReads>& reads() const { return m_->reads(); }
  /// Runs the pending hook now, if any (a tick that made no move call).
  void runHook() {
    if (!hook) return;
    auto f = std::move(hook);
    hook = nullptr;
    f();
  }
  std::function<void()> hook;

 private:
  std::unique_ptr<migrate::ModelKernelMigrator> m_;
};

// Start time (/proc/PID/stat field 22) of every traced process; a new holder of a reused pid has
// a later one.
constexpr uint64_t kTracedStartTime = 1;

// The model's scopes (the engine's ScopeProvider). Every selector is a pid list (assignScope); a
// traced pid is in scope while its traced process holds it, that is until a modelled pid reuse
// gives the pid to a new process (`startTimes` then shows a later start time), which is counted
// in vanishedPids and never selected, as scope::SysRootScopeProvider's pinning of pid-list
// entries does on a live system.
class ModelScopes final : public scope::ScopeProvider {
 public:
  explicit ModelScopes(const std::map<pid_t, uint64_t>& startTimes) : startTimes_(startTimes) {}

  Status refreshMounts() override { return Ok{}; }  // the model has no cgroups

  Result<scope::WorkloadScope> resolve(const scope::WorkloadSelector& sel) override {
    if (sel.cgroup || sel.command)
      return Error::input("the simulation selects processes by pid only",
                          "workload '" + sel.name + "'");
    scope::WorkloadScope scope;
    scope.name = sel.name;
    std::vector<pid_t> pids = sel.pids;
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    for (pid_t p : pids) {
      auto it = startTimes_.find(p);
      if (it == startTimes_.end() || it->second != kTracedStartTime) {
        ++scope.vanishedPids;
        continue;
      }
      scope.startTimes[p] = it->second;
      scope.pids.push_back(p);
    }
    return scope;
  }

 private:
  const std::map<pid_t, uint64_t>& startTimes_;
};

// /proc/PID/stat of a traced process; `startTime` is field 22.
std::string statLine(pid_t pid, uint64_t startTime) {
  return std::to_string(pid) + " (traced) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " +
         std::to_string(startTime) + " 0 0\n";
}

// A private copy of the topology tree, removed on destruction.
class TempRoot {
 public:
  ~TempRoot() {
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  Status make(const std::string& from) {
    std::error_code ec;
    if (!fs::is_directory(from, ec))
      return Error::input(
          "not a directory (want a topology tree such as "
          "tests/fixtures/topology/qemu-2node)",
          from);
    const char* tmp = ::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/tierd-simulate-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return Error::fromErrno("mkdtemp", tmpl);
    dir_ = tmpl;
    fs::copy(from, dir_, fs::copy_options::recursive, ec);
    if (ec) return Error::env("cannot copy the topology tree: " + ec.message(), from);
    return Ok{};
  }
  Status put(const std::string& abs, const std::string& text) const {
    std::error_code ec;
    fs::create_directories(fs::path(dir_ + abs).parent_path(), ec);
    std::ofstream out(dir_ + abs, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Error::fromErrno("cannot write", dir_ + abs);
    return Ok{};
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// The modelled machine's topology (the engine's TopologyProvider): the topology tree's, read once
// per [tiers] override, with each memory node's MemFree its free memory besides the traced
// processes (`baseFree`) minus the modelled bytes now on it, so the engine sees promotions fill
// the fast tier.
class ModelTopology final : public topology::TopologyProvider {
 public:
  ModelTopology(sys::SysRoot root, topology::TierOverride readWith, topology::Topology read,
                const std::map<NodeId, uint64_t>& baseFree,
                const std::vector<std::pair<pid_t, uint64_t>>& regions,
                const migrate::FakePageSystem& kernel)
      : root_(std::move(root)),
        readWith_(std::move(readWith)),
        read_(std::move(read)),
        baseFree_(baseFree),
        regions_(regions),
        kernel_(kernel) {}

  Result<topology::Topology> read(const topology::TierOverride& override) override {
    if (override.fastNodes != readWith_.fastNodes || override.slowNodes != readWith_.slowNodes) {
      auto again = topology::readTopology(root_, override);
      if (!again) return again.error();
      read_ = std::move(again.value());
      readWith_ = override;
    }
    std::map<NodeId, uint64_t> on;
    for (const auto& [pid, start] : regions_)
      if (auto n = kernel_.nodeOf(pid, start)) on[*n] += kRegion;
    topology::Topology topo = read_;
    for (topology::Node& n : topo.nodes)
      if (auto f = baseFree_.find(n.id); f != baseFree_.end())
        n.memFree = f->second > on[n.id] ? f->second - on[n.id] : 0;
    return topo;
  }

 private:
  sys::SysRoot root_;
  topology::TierOverride readWith_;
  topology::Topology read_;
  const std::map<NodeId, uint64_t>& baseFree_;
  const std::vector<std::pair<pid_t, uint64_t>>& regions_;
  const migrate::FakePageSystem& kernel_;
};

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

double share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// One run of simulate(): the model of the file comment, built in steps (scope, machine, memory,
// processes, engine, clock), then the ticks, then the summary. Lives on simulate()'s stack and
// is neither copied nor moved: the engine's sources and the migrator hook refer to its members.
class Simulation {
 public:
  Simulation(const telemetry::Trace& trace, const policy::CompiledConfig& config,
             const SimulationOptions& options)
      : trace_(trace),
        config_(config),
        options_(options),
        pingPong_(options.pingPongWindowNs),  // the daemon's definition too
        reused_(options.pidReuses.size(), false) {}
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  Result<SimulationResult> run() {
    describeInputs();
    if (Status s = checkInputs(); !s) return s.error();
    if (Status s = assignScope(); !s) return s.error();
    if (Status s = readMachine(); !s) return s.error();
    if (Status s = modelMemory(); !s) return s.error();
    if (Status s = writeProcesses(); !s) return s.error();
    startEngine();
    setClock();
    for (uint64_t k = 1; k <= ticks_; ++k)
      if (Status s = runTick(k); !s) return s.error();
    engine_->shutdown();
    summarize();
    return std::move(res_);
  }

 private:
  // The result's copy of the inputs and of the config values it reports.
  void describeInputs() {
    res_.options = options_;
    res_.traceSource = trace_.header.source;
    res_.intervalNs = config_.daemon.intervalNs;
    res_.maxPromoteMiBPerS = config_.migration.maxPromoteMiBPerS;
    res_.maxDemoteMiBPerS = config_.migration.maxDemoteMiBPerS;
    res_.dryRun = config_.daemon.dryRun;
    res_.regionBytes = kRegion;
  }

  Status checkInputs() const {
    if (trace_.samples.empty())
      return Error::input("the trace has no samples", options_.traceLabel);
    if (config_.workloads.empty())
      return Error::input("the config has no [[workload]] to simulate", options_.configLabel);
    if (config_.daemon.intervalNs == 0)
      return Error::input("daemon.interval must be positive", options_.configLabel);
    return Ok{};
  }

  // Scope: pid -> workload index, and the config copy whose selectors are those pid lists.
  Status assignScope() {
    size_t fallback = 0;
    if (!options_.defaultWorkload.empty()) {
      auto it = std::find_if(config_.workloads.begin(), config_.workloads.end(),
                             [&](const auto& w) { return w.name == options_.defaultWorkload; });
      if (it == config_.workloads.end())
        return Error::input("no workload named '" + options_.defaultWorkload + "'",
                            options_.configLabel);
      fallback = static_cast<size_t>(it - config_.workloads.begin());
    }
    for (const AccessSample& s : trace_.samples)
      byPid_[s.pid].push_back(s);
    for (const SimPidReuse& r : options_.pidReuses)
      if (!byPid_.count(r.pid))
        return Error::input("pid reuse: pid " + std::to_string(r.pid) + " is not in the trace",
                            options_.traceLabel);
    for (const auto& [pid, samples] : byPid_) {
      size_t w = fallback;
      for (size_t i = 0; i < config_.workloads.size(); ++i) {
        const policy::WorkloadSelector& sel = config_.workloads[i].selector;
        if (sel.kind == policy::WorkloadSelector::Kind::Pids &&
            std::binary_search(sel.pids.begin(), sel.pids.end(), pid)) {
          w = i;
          break;
        }
      }
      workloadOf_[pid] = w;
    }
    simConfig_ = std::make_shared<policy::CompiledConfig>(config_);
    for (size_t i = 0; i < simConfig_->workloads.size(); ++i) {
      policy::WorkloadSelector sel;
      sel.kind = policy::WorkloadSelector::Kind::Pids;
      for (const auto& [pid, w] : workloadOf_)
        if (w == i) sel.pids.push_back(pid);
      simConfig_->workloads[i].selector = sel;
    }
    return Ok{};
  }

  // The machine: a private copy of the topology tree, its tiers and each node's memory.
  Status readMachine() {
    if (Status s = root_.make(options_.topologyDir); !s) return s.error();
    sysRoot_ = sys::SysRoot(root_.dir());
    topology::TierOverride override;
    override.fastNodes = config_.tiers.fastNodes;
    override.slowNodes = config_.tiers.slowNodes;
    auto topo = topology::readTopology(sysRoot_, override);
    if (!topo) return asGiven(topo.error()).within("topology");
    res_.topologyMethod = topo->method;
    res_.fastNodes = topo->nodesIn(topology::Tier::Fast);
    res_.slowNodes = topo->nodesIn(topology::Tier::Slow);
    if (res_.fastNodes.empty() || res_.slowNodes.empty())
      return Error::input(
          "the topology needs at least one fast and one slow node (method " + topo->method + ")",
          options_.topologyDir);
    fast_ = std::set<NodeId>(res_.fastNodes.begin(), res_.fastNodes.end());
    uint64_t fastTotal = 0;
    for (const topology::Node& n : topo->nodes) {
      if (n.tier == topology::Tier::None) continue;
      baseFree_[n.id] = n.memFree;
      if (n.tier == topology::Tier::Fast) {
        fastTotal += n.memTotal;
        res_.fastFreeAtStartBytes += n.memFree;
      }
    }
    res_.fastHeadroomBytes = config_.migration.fastHeadroom.resolve(fastTotal);
    tiers_ = override;
    machine_ = std::move(topo.value());
    return Ok{};
  }

  // The memory model: sampled 2 MiB regions, THP-backed, on the slow tier.
  Status modelMemory() {
    auto fakeOwned = std::make_unique<migrate::ModelKernelMigrator>(migratorConfig(config_));
    kernel_ = &fakeOwned->kernel();
    migratorOwned_ = std::make_unique<HookedMigrator>(std::move(fakeOwned));
    migrator_ = migratorOwned_.get();
    std::set<NodeId> nodes;
    for (const auto& [id, f] : baseFree_)
      nodes.insert(id);
    kernel_->setNodes(nodes);
    mapSampledRegions();
    return placeOnSlowTier();
  }

  // One THP mapping per run of consecutive sampled 2 MiB regions of each pid.
  void mapSampledRegions() {
    for (const auto& [pid, samples] : byPid_) {
      std::set<uint64_t> starts;
      for (const AccessSample& s : samples)
        starts.insert(s.vaddr & ~(kRegion - 1));
      SimProcess proc;
      proc.pid = pid;
      proc.workload = config_.workloads[workloadOf_[pid]].name;
      proc.samples = samples.size();
      proc.bytes = starts.size() * kRegion;
      for (auto it = starts.begin(); it != starts.end();) {
        const uint64_t first = *it;
        uint64_t end = first + kRegion;
        for (++it; it != starts.end() && *it == end; ++it)
          end += kRegion;
        kernel_->map(pid, first, end - first, migrate::FakeBacking::Thp);
        mapped_[pid].emplace_back(first, end);
        ++proc.mappings;
      }
      for (uint64_t r : starts)
        regions_.emplace_back(pid, r);
      res_.modelledBytes += proc.bytes;
      res_.processes.push_back(proc);
    }
  }

  // Every region on a slow node (ascending ids, in region order), then each node's free THP
  // capacity: what is left of its free memory.
  Status placeOnSlowTier() {
    std::map<NodeId, uint64_t> placed;
    size_t next = 0;
    for (NodeId n : res_.slowNodes) {
      while (next < regions_.size() && placed[n] + kRegion <= baseFree_[n]) {
        kernel_->populate(regions_[next].first, regions_[next].second, kRegion, n);
        placed[n] += kRegion;
        ++next;
      }
    }
    if (next < regions_.size()) {
      uint64_t slowFree = 0;
      for (NodeId n : res_.slowNodes)
        slowFree += baseFree_[n];
      return Error::input(
          "the trace's " + formatBytes(res_.modelledBytes) +
              " of sampled 2 MiB regions do not fit in the slow tier's " + formatBytes(slowFree) +
              " free",
          options_.topologyLabel.empty() ? options_.topologyDir : options_.topologyLabel);
    }
    for (const auto& [n, f] : baseFree_)
      kernel_->setCapacity(n, kRegion, (f - placed[n]) / kRegion);
    return Ok{};
  }

  // The processes: who holds each traced pid (startTimes_, what ModelScopes answers from), and
  // the files the engine still reads under its root for them: /proc/PID/stat (the start time,
  // field 22, names the process: the identity checked before every move call) and
  // /proc/PID/status (its allowed CPUs and nodes).
  Status writeProcesses() {
    for (const auto& [pid, w] : workloadOf_) {
      startTimes_[pid] = kTracedStartTime;
      const std::string dir = "/proc/" + std::to_string(pid);
      if (Status s = root_.put(dir + "/stat", statLine(pid, kTracedStartTime)); !s)
        return s.error();
      // The traced process runs unconstrained: every CPU and node allowed (/proc/PID/status).
      if (Status s =
              root_.put(dir + "/status",
                        "Name:\ttraced\nCpus_allowed_list:\t0-8191\nMems_allowed_list:\t0-1023\n");
          !s)
        return s.error();
    }
    return Ok{};
  }

  // The engine, with one classifying replay per pid.
  void startEngine() {
    for (auto& [pid, samples] : byPid_) {
      telemetry::Trace t;
      t.header = trace_.header;
      t.samples = samples;
      std::stable_sort(
          t.samples.begin(), t.samples.end(),
          [](const AccessSample& a, const AccessSample& b) { return a.timeNs < b.timeNs; });
      perPid_[pid] = std::move(t);
    }
    SourceFactory factory =
        [this](pid_t pid, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
      auto it = perPid_.find(pid);
      if (it == perPid_.end()) return Error::input("pid not in the trace", std::to_string(pid));
      telemetry::Trace t = std::move(it->second);
      perPid_.erase(it);
      return std::unique_ptr<telemetry::HotnessSource>(
          std::make_unique<ClassifyingReplay>(std::move(t), *kernel_, fast_, counters_));
    };
    migrate::FakePageSystem* kernel = kernel_;
    std::shared_ptr<migrate::ProcReads> reads = migratorOwned_->reads();
    engine_ = std::make_unique<Engine>(
        sysRoot_, std::move(migratorOwned_), factory,
        /*selfPid=*/0, simConfig_, [kernel](pid_t pid) { return kernel->smaps(pid); },
        NumaMapsReader{}, [kernel](pid_t pid) { return kernel->maps(pid); }, std::move(reads));
    engine_->setTopologyProvider(std::make_unique<ModelTopology>(
        sysRoot_, std::move(tiers_), std::move(machine_), baseFree_, regions_, *kernel_));
    engine_->setScopeProvider(std::make_unique<ModelScopes>(startTimes_));
  }

  // Time: t0 is the first sample's time; ticks cover the trace, then the tail.
  void setClock() {
    uint64_t tLast = 0;
    for (const AccessSample& s : trace_.samples) {
      t0_ = std::min(t0_, s.timeNs);
      tLast = std::max(tLast, s.timeNs);
    }
    interval_ = config_.daemon.intervalNs;
    const uint64_t traceTicks = std::max<uint64_t>(1, (tLast - t0_ + interval_ - 1) / interval_);
    ticks_ = traceTicks + (options_.tailNs + interval_ - 1) / interval_;
  }

  // Tick k (1-based) at t0 + k * interval, its deadline one interval later.
  Status runTick(uint64_t k) {
    const uint64_t now = t0_ + k * interval_;
    kernel_->sleepUntilNs(static_cast<int64_t>(k * interval_), nullptr);
    kernel_->clearLog();
    counters_ = {};
    armPidReuses(k);
    auto report = engine_->tick(now, static_cast<int64_t>((k + 1) * interval_), nullptr);
    migrator_->runHook();  // a tick without move calls: the pid changes hands after it
    if (!reuseStatus_) return reuseStatus_.error();
    if (!report) return asGiven(report.error()).within("tick " + std::to_string(k));
    for (const std::string& p : report->problems) {
      std::string clean = replaceAll(p, root_.dir(), options_.topologyDir);
      if (seenProblems_.insert(clean).second) res_.problems.push_back(clean);
    }
    res_.ticks.push_back(tickFigures(k, now, *report));
    return Ok{};
  }

  // The pid reuses due by tick k land at the start of its first move call (or after it).
  void armPidReuses(uint64_t k) {
    std::vector<pid_t> due;
    for (size_t i = 0; i < options_.pidReuses.size(); ++i)
      if (!reused_[i] && options_.pidReuses[i].atNs <= k * interval_) {
        reused_[i] = true;
        due.push_back(options_.pidReuses[i].pid);
      }
    if (!due.empty())
      migrator_->hook = [this, due, k] {
        for (pid_t pid : due)
          reusePid(pid, k);
      };
  }

  // A new process gets `pid` in tick k: the same mappings, each sampled region on the node the
  // old process's was on (remembered to check that tierd never moves them), a later start time.
  void reusePid(pid_t pid, uint64_t k) {
    std::vector<std::pair<uint64_t, NodeId>> was;
    for (const auto& [p, start] : regions_)
      if (p == pid)
        if (auto n = kernel_->nodeOf(pid, start)) was.emplace_back(start, *n);
    kernel_->reusePid(pid);
    for (const auto& [start, end] : mapped_[pid])
      kernel_->map(pid, start, end - start, migrate::FakeBacking::Thp);
    for (const auto& [start, node] : was) {
      kernel_->populate(pid, start, kRegion, node);
      newHolder_[{pid, start}] = node;
    }
    startTimes_[pid] = kTracedStartTime + k;
    if (Status st =
            root_.put("/proc/" + std::to_string(pid) + "/stat", statLine(pid, startTimes_[pid]));
        !st)
      reuseStatus_ = st;
    for (SimProcess& p : res_.processes)
      if (p.pid == pid) p.reusedAtTick = k;
  }

  // The figures of tick k (SimTick), taken after the tick ran at `now`.
  SimTick tickFigures(uint64_t k, uint64_t now, const TickReport& report) {
    SimTick t;
    t.tick = k;
    t.timeNs = k * interval_;
    t.samples = counters_.samples;
    t.fastSamples = counters_.fastSamples;
    t.accesses = counters_.accesses;
    t.fastAccesses = counters_.fastAccesses;
    t.plannedPromoteBytes = report.plannedPromoteBytes;
    t.plannedDemoteBytes = report.plannedDemoteBytes;
    t.promotedBytes = report.promotedBytes;
    t.demotedBytes = report.demotedBytes;
    countMoves(report, now, t);
    t.pidReuses = engine_->totals().pidReuses - reusesBefore_;
    t.identityChecksFailed = engine_->totals().identityChecksFailed - checksBefore_;
    reusesBefore_ = engine_->totals().pidReuses;
    checksBefore_ = engine_->totals().identityChecksFailed;
    const uint64_t guardNow = engine_->heat().recordStats().pingPongHeld;
    t.guardHolds = guardNow - guardBefore_;
    guardBefore_ = guardNow;
    measureTiers(t);
    return t;
  }

  // Moves per direction, refused and unfinished pages, ping-pong moves of the tick's batch.
  void countMoves(const TickReport& report, uint64_t now, SimTick& t) {
    for (const RangeResult& r : report.batch.ranges) {
      t.noMemoryPages += r.outcomes[MoveOutcome::NoMemory];
      t.unfinishedPages += r.outcomes[MoveOutcome::NotAttempted];
      if (r.bytesMoved == 0) continue;
      const Direction d = r.range.direction;
      (d == Direction::Promote ? t.promotions : t.demotions) += 1;
    }
    // Ping-pong exactly as the daemon's metric counts it (policy/PingPong.h): moves that reverse
    // the previous one, which reversed the one before, all within the window.
    const policy::PingPongCounts pp = pingPong_.recordBatch(report.batch.ranges, now);
    t.pingPongMoves = pp.promote + pp.demote;
  }

  // Modelled bytes per tier and the fast tier's free memory after the tick.
  void measureTiers(SimTick& t) const {
    for (const auto& [pid, start] : regions_) {
      auto n = kernel_->nodeOf(pid, start);
      if (!n) continue;
      (fast_.count(*n) ? t.fastBytes : t.slowBytes) += kRegion;
    }
    for (NodeId n : res_.fastNodes) {
      uint64_t here = 0;
      for (const auto& [pid, start] : regions_)
        if (kernel_->nodeOf(pid, start) == n) here += kRegion;
      const uint64_t base = baseFree_.at(n);
      t.fastFreeBytes += base > here ? base - here : 0;
    }
  }

  // Totals over the ticks (SimSummary) and the new holders' moved bytes.
  void summarize() {
    SimSummary& sum = res_.summary;
    for (const auto& [at, node] : newHolder_)
      if (kernel_->nodeOf(at.first, at.second) != node) sum.newHolderMovedBytes += kRegion;
    sum.ticks = res_.ticks.size();
    sum.simulatedNs = ticks_ * interval_;
    sum.minFastFreeBytes = res_.fastFreeAtStartBytes;
    const size_t quarter = std::max<size_t>(1, res_.ticks.size() / 4);
    for (size_t i = 0; i < res_.ticks.size(); ++i) {
      const SimTick& t = res_.ticks[i];
      sum.samples += t.samples;
      sum.fastSamples += t.fastSamples;
      sum.accesses += t.accesses;
      sum.fastAccesses += t.fastAccesses;
      sum.promotedBytes += t.promotedBytes;
      sum.demotedBytes += t.demotedBytes;
      sum.promotions += t.promotions;
      sum.demotions += t.demotions;
      sum.pingPongMoves += t.pingPongMoves;
      sum.guardHolds += t.guardHolds;
      sum.noMemoryPages += t.noMemoryPages;
      sum.unfinishedPages += t.unfinishedPages;
      sum.pidReuses += t.pidReuses;
      sum.identityChecksFailed += t.identityChecksFailed;
      sum.peakFastBytes = std::max(sum.peakFastBytes, t.fastBytes);
      sum.minFastFreeBytes = std::min(sum.minFastFreeBytes, t.fastFreeBytes);
      if (i + quarter >= res_.ticks.size()) {
        sum.lastQuarterAccesses += t.accesses;
        sum.lastQuarterFastAccesses += t.fastAccesses;
      }
    }
  }

  // `e` naming the topology tree as the operator gave it, not its private copy.
  Error asGiven(Error e) const {
    e.context = replaceAll(e.context, root_.dir(), options_.topologyDir);
    e.message = replaceAll(e.message, root_.dir(), options_.topologyDir);
    return e;
  }

  const telemetry::Trace& trace_;
  const policy::CompiledConfig& config_;
  const SimulationOptions& options_;
  SimulationResult res_;
  // Scope (assignScope).
  std::map<pid_t, std::vector<AccessSample>> byPid_;
  std::map<pid_t, size_t> workloadOf_;
  std::map<pid_t, uint64_t> startTimes_;  // start time of each traced pid's holder (writeProcesses)
  std::shared_ptr<policy::CompiledConfig> simConfig_;
  // The machine (readMachine).
  TempRoot root_;
  sys::SysRoot sysRoot_;
  std::set<NodeId> fast_;
  std::map<NodeId, uint64_t> baseFree_;
  topology::TierOverride tiers_;  // the [tiers] override `machine_` was read with
  topology::Topology machine_;    // the tree's topology as read, before the model's memory
  // The memory model (modelMemory); the kernel belongs to the migrator, which belongs to the
  // engine once it is started.
  std::unique_ptr<HookedMigrator> migratorOwned_;
  HookedMigrator* migrator_ = nullptr;
  migrate::FakePageSystem* kernel_ = nullptr;
  std::map<pid_t, std::vector<std::pair<uint64_t, uint64_t>>> mapped_;  // pid -> [start, end)
  std::vector<std::pair<pid_t, uint64_t>> regions_;  // (pid, region start), ascending
  // The sources' input and output (startEngine, runTick).
  std::map<pid_t, telemetry::Trace> perPid_;
  DrainCounters counters_;
  // Time (setClock).
  uint64_t t0_ = UINT64_MAX, interval_ = 0, ticks_ = 0;
  // Carried from tick to tick.
  policy::PingPongTracker pingPong_;
  std::set<std::string> seenProblems_;
  uint64_t guardBefore_ = 0, reusesBefore_ = 0, checksBefore_ = 0;
  // Pid reuses: done yet, the new holders' regions and the node each had when it got the pid.
  std::vector<bool> reused_;
  std::map<std::pair<pid_t, uint64_t>, NodeId> newHolder_;
  Status reuseStatus_ = Ok{};
  std::unique_ptr<Engine> engine_;  // last, so destroyed first: it refers to the members above
};

}  // namespace

Result<SimulationResult> simulate(const telemetry::Trace& trace,
                                  const policy::CompiledConfig& config,
                                  const SimulationOptions& options) {
  Simulation simulation(trace, config, options);
  return simulation.run();
}

namespace {

std::string pct(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * share(part, whole));
  return buf;
}

std::string nodeList(const std::vector<NodeId>& nodes) {
  std::string out;
  for (NodeId n : nodes)
    out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::string formatSimulationText(const SimulationResult& r, uint64_t rowTicks) {
  if (rowTicks == 0) rowTicks = 1;
  const SimulationOptions& o = r.options;
  std::ostringstream out;
  int decimals = 3;
  if (r.intervalNs * rowTicks % 1'000'000'000 == 0)
    decimals = 0;
  else if (r.intervalNs * rowTicks % 100'000'000 == 0)
    decimals = 1;
  auto seconds = [&](uint64_t ns) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*fs", decimals, static_cast<double>(ns) / 1e9);
    return std::string(buf);
  };
  const uint64_t span = r.ticks.empty() ? 0 : r.ticks.back().timeNs;
  out << "trace     " << o.traceLabel << ": " << r.traceSource << ", " << r.summary.samples
      << " samples, " << r.processes.size() << " process" << (r.processes.size() == 1 ? "" : "es")
      << "\n";
  out << "config    " << o.configLabel << ": tick " << seconds(r.intervalNs)
      << ", promote <= " << r.maxPromoteMiBPerS << " MiB/s, demote <= " << r.maxDemoteMiBPerS
      << " MiB/s, fast headroom " << formatBytes(r.fastHeadroomBytes)
      << (r.dryRun ? ", DRY RUN (nothing moves)" : "") << "\n";
  out << "topology  " << o.topologyLabel << ": fast node" << (r.fastNodes.size() == 1 ? " " : "s ")
      << nodeList(r.fastNodes) << " (" << formatBytes(r.fastFreeAtStartBytes) << " free), slow node"
      << (r.slowNodes.size() == 1 ? " " : "s ") << nodeList(r.slowNodes) << " (tiers by "
      << r.topologyMethod << ")\n";
  for (const SimProcess& p : r.processes)
    out << "model     pid " << p.pid << " -> workload " << p.workload << ": " << p.samples
        << " samples, " << formatBytes(p.bytes) << " in " << p.bytes / r.regionBytes
        << " sampled 2 MiB regions (" << p.mappings << " THP mapping"
        << (p.mappings == 1 ? "" : "s") << "), all starting on the slow tier\n";
  for (const SimPidReuse& u : o.pidReuses) {
    uint64_t tick = 0;
    for (const SimProcess& p : r.processes)
      if (p.pid == u.pid) tick = p.reusedAtTick;
    out << "model     pid " << u.pid << " reused at " << seconds(u.atNs) << ": "
        << (tick ? "in tick " + std::to_string(tick) +
                       ", after its scope scan, a new process holds the pid (in no workload)"
                 : std::string("after the last tick, never happened"))
        << "\n";
  }
  out << "\n";
  out << pad("time", 9) << pad("samples", 9) << pad("on-fast", 9) << pad("promoted", 11)
      << pad("demoted", 11) << pad("ping-pong", 10) << pad("fast-tier", 11) << pad("fast-free", 11)
      << "\n";
  for (size_t i = 0; i < r.ticks.size(); i += rowTicks) {
    SimTick row;
    const size_t end = std::min(r.ticks.size(), i + rowTicks);
    for (size_t j = i; j < end; ++j) {
      const SimTick& t = r.ticks[j];
      row.samples += t.samples;
      row.accesses += t.accesses;
      row.fastAccesses += t.fastAccesses;
      row.promotedBytes += t.promotedBytes;
      row.demotedBytes += t.demotedBytes;
      row.pingPongMoves += t.pingPongMoves;
    }
    const SimTick& last = r.ticks[end - 1];
    out << pad(seconds(last.timeNs), 9) << pad(std::to_string(row.samples), 9)
        << pad(pct(row.fastAccesses, row.accesses), 9) << pad(formatBytes(row.promotedBytes), 11)
        << pad(formatBytes(row.demotedBytes), 11) << pad(std::to_string(row.pingPongMoves), 10)
        << pad(formatBytes(last.fastBytes), 11) << pad(formatBytes(last.fastFreeBytes), 11) << "\n";
  }
  const SimSummary& s = r.summary;
  out << "\nsummary   " << s.ticks << " tick" << (s.ticks == 1 ? "" : "s") << " (" << seconds(span)
      << " simulated), " << s.samples << " samples\n"
      << "  on fast tier    " << pct(s.fastAccesses, s.accesses) << " of accesses overall, "
      << pct(s.lastQuarterFastAccesses, s.lastQuarterAccesses) << " in the last quarter\n"
      << "  promoted        " << formatBytes(s.promotedBytes) << " in " << s.promotions
      << " moves\n"
      << "  demoted         " << formatBytes(s.demotedBytes) << " in " << s.demotions << " moves\n"
      << "  ping-pong       " << s.pingPongMoves << " moves back within "
      << seconds(o.pingPongWindowNs) << ", " << s.guardHolds << " regions held by the guard\n"
      << "  fast tier       peak " << formatBytes(s.peakFastBytes)
      << " of modelled memory, least free " << formatBytes(s.minFastFreeBytes) << " (headroom "
      << formatBytes(r.fastHeadroomBytes) << ")\n"
      << "  refused         " << s.noMemoryPages << " pages for lack of memory, "
      << s.unfinishedPages << " pages left at the tick deadline\n";
  if (!o.pidReuses.empty())
    out << "  pid reuse       " << s.pidReuses << " tracked pids found naming a new process, "
        << s.identityChecksFailed << " move calls refused by the identity check, "
        << formatBytes(s.newHolderMovedBytes) << " of new holders moved\n";
  for (const std::string& p : r.problems)
    out << "problem   " << p << "\n";
  return out.str();
}

nlohmann::json simulationJson(const SimulationResult& r) {
  using nlohmann::json;
  const SimulationOptions& o = r.options;
  json processes = json::array();
  for (const SimProcess& p : r.processes)
    processes.push_back({{"pid", p.pid},
                         {"workload", p.workload},
                         {"samples", p.samples},
                         {"mappings", p.mappings},
                         {"bytes", p.bytes}});
  json ticks = json::array();
  for (const SimTick& t : r.ticks)
    ticks.push_back({{"tick", t.tick},
                     {"time_ns", t.timeNs},
                     {"samples", t.samples},
                     {"fast_samples", t.fastSamples},
                     {"accesses", t.accesses},
                     {"fast_accesses", t.fastAccesses},
                     {"fast_share", share(t.fastAccesses, t.accesses)},
                     {"planned_promote_bytes", t.plannedPromoteBytes},
                     {"planned_demote_bytes", t.plannedDemoteBytes},
                     {"promoted_bytes", t.promotedBytes},
                     {"demoted_bytes", t.demotedBytes},
                     {"promotions", t.promotions},
                     {"demotions", t.demotions},
                     {"pingpong_moves", t.pingPongMoves},
                     {"guard_holds", t.guardHolds},
                     {"no_memory_pages", t.noMemoryPages},
                     {"unfinished_pages", t.unfinishedPages},
                     {"fast_bytes", t.fastBytes},
                     {"slow_bytes", t.slowBytes},
                     {"fast_free_bytes", t.fastFreeBytes}});
  if (!o.pidReuses.empty())
    for (size_t i = 0; i < r.ticks.size(); ++i) {
      ticks[i]["pid_reuses"] = r.ticks[i].pidReuses;
      ticks[i]["identity_checks_failed"] = r.ticks[i].identityChecksFailed;
    }
  const SimSummary& s = r.summary;
  json doc = json{
      {"format", "tierd-simulate"},
      {"version", 1},
      {"trace", {{"path", o.traceLabel}, {"source", r.traceSource}, {"samples", s.samples}}},
      {"config",
       {{"path", o.configLabel},
        {"interval_ns", r.intervalNs},
        {"max_promote_mib_per_s", r.maxPromoteMiBPerS},
        {"max_demote_mib_per_s", r.maxDemoteMiBPerS},
        {"fast_headroom_bytes", r.fastHeadroomBytes},
        {"dry_run", r.dryRun}}},
      {"topology",
       {{"path", o.topologyLabel},
        {"method", r.topologyMethod},
        {"fast_nodes", r.fastNodes},
        {"slow_nodes", r.slowNodes},
        {"fast_free_bytes", r.fastFreeAtStartBytes}}},
      {"model",
       {{"region_bytes", r.regionBytes},
        {"bytes", r.modelledBytes},
        {"initial_tier", "slow"},
        {"pingpong_window_ns", o.pingPongWindowNs},
        {"processes", processes}}},
      {"ticks", ticks},
      {"summary",
       {{"ticks", s.ticks},
        {"simulated_ns", s.simulatedNs},
        {"samples", s.samples},
        {"fast_samples", s.fastSamples},
        {"accesses", s.accesses},
        {"fast_accesses", s.fastAccesses},
        {"fast_share", share(s.fastAccesses, s.accesses)},
        {"last_quarter_fast_share", share(s.lastQuarterFastAccesses, s.lastQuarterAccesses)},
        {"promoted_bytes", s.promotedBytes},
        {"demoted_bytes", s.demotedBytes},
        {"promotions", s.promotions},
        {"demotions", s.demotions},
        {"pingpong_moves", s.pingPongMoves},
        {"guard_holds", s.guardHolds},
        {"no_memory_pages", s.noMemoryPages},
        {"unfinished_pages", s.unfinishedPages},
        {"peak_fast_bytes", s.peakFastBytes},
        {"min_fast_free_bytes", s.minFastFreeBytes}}},
      {"problems", r.problems},
  };
  if (!o.pidReuses.empty()) {
    json reuses = json::array();
    for (const SimPidReuse& u : o.pidReuses) {
      uint64_t tick = 0;
      for (const SimProcess& p : r.processes)
        if (p.pid == u.pid) tick = p.reusedAtTick;
      reuses.push_back({{"pid", u.pid}, {"at_ns", u.atNs}, {"tick", tick}});
    }
    doc["model"]["pid_reuses"] = reuses;
    doc["summary"]["pid_reuses"] = s.pidReuses;
    doc["summary"]["identity_checks_failed"] = s.identityChecksFailed;
    doc["summary"]["new_holder_moved_bytes"] = s.newHolderMovedBytes;
  }
  return doc;
}

}  // namespace tierd::daemon

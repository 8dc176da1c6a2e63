#include "tierd/daemon/Engine.h"

#include <algorithm>
#include <iterator>

#include "policy/TickContext.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/Tuning.h"
#include "tierd/daemon/WorkloadFigures.h"
#include "tierd/sys/Parsers.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::daemon {
namespace {

topology::TierOverride toOverride(const policy::TiersConfig& t) {
  topology::TierOverride o;
  o.fastNodes = t.fastNodes;
  o.slowNodes = t.slowNodes;
  return o;
}

}  // namespace

Engine::Engine(const sys::SysRoot& root, std::unique_ptr<migrate::Migrator> migrator,
               SourceFactory sources, pid_t selfPid,
               std::shared_ptr<const policy::CompiledConfig> config, MappingsReader mappings,
               NumaMapsReader numaMaps, MappingsReader layout,
               std::shared_ptr<migrate::ProcReads> reads)
    : root_(root),
      topology_(std::make_unique<topology::SysRootTopologyProvider>(root)),
      migrator_(std::move(migrator)),
      reads_(reads ? std::move(reads) : std::make_shared<migrate::ProcReads>()),
      scopes_(std::make_unique<scope::SysRootScopeProvider>(root, selfPid)),
      config_(std::move(config)),
      locations_(*migrator_, *reads_, heat_,
                 mappings ? std::move(mappings)
                          : MappingsReader([root](pid_t pid) { return sys::readSmaps(root, pid); }),
                 numaMaps ? std::move(numaMaps) : NumaMapsReader([root](pid_t pid) {
                   return sys::readNumaMaps(root, pid);
                 }),
                 layout ? std::move(layout)
                        : MappingsReader([root](pid_t pid) { return sys::readMaps(root, pid); })),
      procs_(root),
      sources_(std::move(sources)),
      placement_(root) {
  applyWorkloadParams();
  migrator_->setProcessCheck([this](pid_t pid) { return stillSame(pid); });
}

void Engine::setTopologyProvider(std::unique_ptr<topology::TopologyProvider> provider) {
  topology_ = std::move(provider);
}

void Engine::setScopeProvider(std::unique_ptr<scope::ScopeProvider> provider) {
  scopes_.setProvider(std::move(provider));
}

bool Engine::stillSame(pid_t pid) {
  const bool same = procs_.stillSame(pid);
  if (!same) ++totals_.identityChecksFailed;
  return same;
}

Engine::~Engine() {
  shutdown();
}

uint64_t Engine::pauseSampling(uint64_t nowNs, uint64_t waitNs,
                               std::vector<std::string>& problems) {
  return sources_.pause(nowNs, waitNs, config_->sampling.settledDamonWindowNs, problems);
}

void Engine::resumeSampling(uint64_t nowNs, std::vector<std::string>& problems) {
  sources_.resume(nowNs, problems, totals_);
}

void Engine::collectSamples() {
  sources_.collect();
}

void Engine::shutdown() {
  sources_.stopAll();
}

void Engine::applyWorkloadParams() {
  for (size_t i = 0; i < config_->workloads.size(); ++i) {
    const policy::WorkloadPolicy& p = config_->workloads[i].policy;
    heat_.setWorkload(static_cast<policy::WorkloadId>(i), {p.heatHalfLifeNs, p.cooldownNs});
  }
}

void Engine::setConfig(std::shared_ptr<const policy::CompiledConfig> config) {
  const auto old = config_;
  config_ = std::move(config);
  migrator_->setLimits(migrationLimits(*config_));
  // Workloads are identified by their index; one whose name or selector changed starts afresh:
  // its processes are dropped with all that was kept of them (source, heat, locations, what was
  // said of their placement) and admitted again by the next tick's scope pass.
  for (size_t i = 0; i < old->workloads.size(); ++i) {
    const bool same = i < config_->workloads.size() &&
                      config_->workloads[i].name == old->workloads[i].name &&
                      config_->workloads[i].selector == old->workloads[i].selector;
    if (same) continue;
    for (pid_t pid : procs_.pidsOf(static_cast<policy::WorkloadId>(i)))
      dropProc(pid);
    heat_.removeWorkload(static_cast<policy::WorkloadId>(i));
    scopes_.forgetWorkload(old->workloads[i].name);
  }
  applyWorkloadParams();
}

void Engine::dropProc(pid_t pid) {
  if (!procs_.tracks(pid)) return;
  sources_.drop(pid);
  heat_.removePid(pid);
  placement_.forget(pid);
  locations_.forget(pid);
  procs_.erase(pid);
}

void Engine::startProc(pid_t pid, const Scoped& s, uint64_t nowNs, TickReport& report) {
  if (!procs_.admit(pid, s)) {
    // Exited, replaced by another process or exec'd another executable since the scope matched
    // it: not this tick.
    ++totals_.vanishedPids;
    return;
  }
  heat_.assignPid(pid, s.workload);
  sources_.start(pid, config_->workloads[s.workload].name, nowNs, report, totals_);
  const telemetry::HotnessSource* source = sources_.sourceOf(pid);
  report.scopeChanges.push_back(
      "workload '" + config_->workloads[s.workload].name + "': pid " + std::to_string(pid) +
      " in scope (start time " + std::to_string(s.startTime) +
      (source ? ", sampled by " + source->name() + ")" : ", not sampled)"));
}

void Engine::dropGoneProcs(const std::map<pid_t, Scoped>& scoped, TickReport& report) {
  for (const GoneProcess& g : procs_.gone(scoped)) {
    const bool reused = g.why == GoneReason::PidReused;
    ++totals_.vanishedPids;
    report.scopeChanges.push_back("workload '" + config_->workloads[g.workload].name + "': pid " +
                                  std::to_string(g.pid) + " gone (" +
                                  (reused ? "exited, its pid now names another process"
                                   : g.why == GoneReason::Execd ? "exec'd another executable"
                                                                : "exited or no longer selected") +
                                  ") after " + std::to_string(sources_.samplesOf(g.pid)) +
                                  " samples; its heat and plans dropped (" +
                                  std::to_string(totals_.vanishedPids) + " gone so far)");
    if (reused) {
      ++totals_.pidReuses;
      report.problems.push_back("pid " + std::to_string(g.pid) +
                                ": now names another process (start time changed); the old "
                                "one's heat and plans are dropped");
    }
    dropProc(g.pid);
  }
}

void Engine::admitProcs(const std::map<pid_t, Scoped>& scoped, uint64_t nowNs, TickReport& report) {
  for (const auto& [pid, s] : scoped)
    if (!procs_.tracks(pid)) startProc(pid, s, nowNs, report);
  sources_.retryDue(nowNs, report, totals_);
}

policy::TickContext Engine::snapshot(uint64_t nowNs, const topology::Topology& topo,
                                     TickReport& report) {
  policy::TickContext ctx = machineContext(nowNs, config_, topo);
  const auto exited = [this](pid_t pid) { return procs_.exitedSinceScope(pid); };
  for (pid_t pid : procs_.pids())
    if (auto t = placement_.read(pid, topo, exited, report, totals_)) ctx.tasks[pid] = *t;
  return ctx;
}

void Engine::addWorkloads(policy::TickContext& ctx,
                          const std::map<size_t, std::map<NodeId, NodeMemory>>& numaStat,
                          std::vector<std::map<NodeId, NodeMemory>> memory, TickReport& report) {
  const std::set<NodeId> fast(report.fastNodes.begin(), report.fastNodes.end());
  for (size_t i = 0; i < config_->workloads.size(); ++i) {
    policy::WorkloadView view;
    view.id = static_cast<policy::WorkloadId>(i);
    view.regions = heat_.regions(view.id, ctx.nowNs);
    WorkloadReport wr;
    wr.name = config_->workloads[i].name;
    if (auto ns = numaStat.find(i); ns != numaStat.end()) {
      wr.memory = ns->second;
      wr.memorySource = MemorySource::NumaStat;
    } else {
      wr.memory = std::move(memory[i]);
      wr.memorySource = MemorySource::NumaMaps;
    }
    wr.pids = procs_.pidsOf(view.id).size();
    addRegionFigures(ctx, view, config_->workloads[i].policy.coldThreshold, fast, wr,
                     report.sourceStates);
    report.workloads.push_back(wr);
    ctx.workloads.push_back(std::move(view));
  }
  finishSourceStates(report.sourceStates);
}

void Engine::locate(uint64_t nowNs, const topology::Topology& topo, TickReport& report) {
  locations_.clearReads();
  LocateTally tally;
  const auto exited = [this](pid_t pid) { return procs_.exitedSinceScope(pid); };
  for (pid_t pid : procs_.pids())
    locations_.refresh(pid, nowNs, config_->daemon.fullLocateIntervalNs, topo, exited, tally,
                       report.problems);
  report.locatesReused = tally.reused;
  report.rangesRelocated = tally.relocated;
  report.thpSplitAfterMove = tally.thpSplitAfterMove;
  totals_.locateErrors += tally.errors;
  totals_.thpSplitAfterMove += tally.thpSplitAfterMove;
  totals_.locatesReused += report.locatesReused;
  totals_.rangesRelocated += report.rangesRelocated;
}

void Engine::execute(const std::vector<MoveRange>& moves, int64_t tickStartNs, int64_t deadlineNs,
                     const std::atomic<bool>* stop, const topology::Topology& topo,
                     TickReport& report) {
  // The migration step always gets a quarter of the interval, and at least a quarter of the
  // tick's wall time (a third of what the steps before it took), even when scope, locate and
  // sampling (many processes, a slow machine) used the whole tick: otherwise the moves never
  // start (every page NotAttempted, tick after tick), or, with 20 s ticks on a loaded TCG
  // guest, a fixed 0.5 s moved 8-22 MiB a tick while 600 MiB of hot regions waited. The tick
  // then overruns; the next is late.
  const int64_t startNs = migrator_->nowNs();
  const int64_t floorNs = startNs + std::max(static_cast<int64_t>(config_->daemon.intervalNs / 4),
                                             std::max<int64_t>(0, startNs - tickStartNs) / 3);
  report.batch = migrator_->execute(moves, std::max(deadlineNs, floorNs), stop);
  const uint64_t pmd = topo.caps.pmdPageSize ? topo.caps.pmdPageSize : 2 * kMiB;
  std::vector<policy::RangeOutcome> outcomes;
  for (const RangeResult& r : report.batch.ranges) {
    if (procs_.tracks(r.range.pid)) locations_.keep(r);
    (r.range.direction == Direction::Promote ? report.promotedBytes : report.demotedBytes) +=
        r.bytesMoved;
    auto result = dominantOutcome(r);
    if (!result) continue;
    if (*result == MoveOutcome::Moved && procs_.tracks(r.range.pid))
      locations_.rememberMovedThp(r.range, pmd);
    outcomes.push_back(
        {r.range.pid, r.range.start, r.range.length, r.range.direction, r.range.target, *result});
  }
  heat_.recordResults(outcomes, report.nowNs);
}

Result<TickReport> Engine::tick(uint64_t nowNs, int64_t deadlineNs, const std::atomic<bool>* stop) {
  TickReport report;
  report.nowNs = nowNs;
  const int64_t tickStartNs = migrator_->nowNs();  // wall clock of the migrator (monotonic)
  uint64_t phaseStart = threadCpuNs();
  auto phase = [&](uint64_t& into) {
    const uint64_t t = threadCpuNs();
    into += t - phaseStart;
    phaseStart = t;
  };
  report.dryRun = config_->daemon.dryRun;
  auto topo = topology_->read(toOverride(config_->tiers));
  if (!topo) return topo.error().within("topology");
  report.topologyMethod = topo->method;
  report.fastNodes = topo->nodesIn(topology::Tier::Fast);
  report.slowNodes = topo->nodesIn(topology::Tier::Slow);
  report.topology = topo.value();
  report.cpu.topologyNs = threadCpuNs() - phaseStart;
  // kernel-patches/ patch 3: calls of at least the copy engine's minimum batch while offload
  // serves move_pages(2); followed each tick, so enabling or disabling offload takes effect.
  const auto& offload = topo->caps.migrateOffload;
  migrator_->setMinBytesPerCall(
      offload && offload->movePagesOffloaded() ? offload->minBatchBytes.value_or(0) : 0);

  // Scopes: who may be sampled, located and moved this tick.
  ScopePass pass = scopes_.refresh(*config_, report, totals_);
  for (policy::WorkloadId w : pass.recreated) {
    // A new workload instance, fresh history: the model forgets its mappings and locations.
    heat_.removeWorkload(w);
    applyWorkloadParams();
    for (pid_t pid : procs_.pidsOf(w))
      locations_.invalidate(pid);
  }
  const std::map<pid_t, Scoped>& scoped = pass.scoped;
  phase(report.cpu.topologyScopeNs);
  dropGoneProcs(scoped, report);
  admitProcs(scoped, nowNs, report);

  // Samples -> heat. Mappings first so that samples outside managed memory are dropped.
  locate(nowNs, topo.value(), report);
  // Resident memory per workload and node: the cgroup's numa_stat, else the numa_maps of its
  // processes (WorkloadReport::memory).
  std::vector<std::map<NodeId, NodeMemory>> memory(config_->workloads.size());
  for (size_t i = 0; i < memory.size(); ++i)
    if (!pass.numaStat.count(i))
      memory[i] = locations_.memoryOf(procs_.pidsOf(static_cast<policy::WorkloadId>(i)),
                                      topo->caps.basePageSize ? topo->caps.basePageSize : 4096);
  phase(report.cpu.locateNs);
  // After a settled wait (daemon.settled_interval) a weighted source's per-tick rates stand for
  // the time waited (Settling::spanAt).
  sources_.drain(nowNs, settling_.spanAt(nowNs, config_->daemon.intervalNs), heat_, report,
                 totals_);
  phase(report.cpu.samplingNs);

  // Snapshot -> plan.
  policy::TickContext ctx = snapshot(nowNs, topo.value(), report);
  addWorkloads(ctx, pass.numaStat, std::move(memory), report);
  policy::ArbiterDecision decision = arbiter_.plan(ctx);
  phase(report.cpu.policyNs);
  report.arbiter = decision.stats;
  report.plannedPromoteBytes = decision.stats.promoteBytes;
  report.plannedDemoteBytes = decision.stats.demoteBytes;
  settle(decision.stats.promoteBytes + decision.stats.demoteBytes, report);

  // Execute, within scope only: a restore's moves first, then the arbiter's, except those of
  // a workload the operator holds (OperatorHold) and all of them while the kernel tiers.
  std::vector<MoveRange> moves = restores_.plan(
      ctx, topo.value(), *config_, [this](policy::WorkloadId w) { return procs_.pidsOf(w); },
      locations_.numaMapsReader());
  const size_t restoreMoves = moves.size();
  std::vector<MoveRange> held;
  for (const MoveRange& m : decision.plan.moves) {
    if (!scoped.count(m.pid) || !procs_.tracks(m.pid))
      ++totals_.outOfScopeMoves;
    else if (heldByOperator(m.pid))
      held.push_back(m);
    else
      moves.push_back(m);
  }
  topology::KernelTiering kernel =
      kernelTiering_.check(root_, topo->caps, config_->migration.allowKernelTiering);
  report.kernelTiering = std::move(kernel.active);
  report.kernelTieringHeld = kernel.held;
  if (kernel.problem) report.problems.push_back(std::move(*kernel.problem));
  const bool execute = !decision.dryRun && !ctx.dryRun;
  if (execute && report.kernelTieringHeld) moves.resize(restoreMoves);
  if (execute && !moves.empty())
    this->execute(moves, tickStartNs, deadlineNs, stop, topo.value(), report);
  accountMoves(moves, restoreMoves, held, report);
  locations_.clearReads();  // no smaps or numa_maps read outlives its tick
  phase(report.cpu.migrateNs);
  ++totals_.ticks;
  totals_.promotedBytes += report.promotedBytes;
  totals_.demotedBytes += report.demotedBytes;
  return report;
}

void Engine::settle(uint64_t plannedBytes, TickReport& report) {
  uint64_t hot = 0;
  for (const WorkloadReport& w : report.workloads)
    hot += w.hotFastBytes + w.hotSlowBytes;
  const bool counts = totals_.samples != 0 && report.scopeChanges.empty();
  const SettleVerdict v =
      settling_.add(report.nowNs, plannedBytes, hot, counts, config_->sampling, config_->daemon);
  report.settleWindowBytes = v.windowBytes;
  report.settled = v.settled;
  report.nextIntervalNs = v.nextIntervalNs;
  sources_.setSettled(report.settled);
}

void Engine::setHold(OperatorHold hold) {
  restores_.setHold(std::move(hold));
}

bool Engine::heldByOperator(pid_t pid) const {
  return restores_.holds(workloadOf(pid));
}

void Engine::accountMoves(const std::vector<MoveRange>& planned, size_t restoreMoves,
                          const std::vector<MoveRange>& held, TickReport& report) {
  addMoveFigures(
      planned, held, report.batch, [this](pid_t pid) { return workloadOf(pid); }, report.workloads);
  restores_.account(report.batch, restoreMoves, [this](pid_t pid) { return workloadOf(pid); });
}

std::vector<std::pair<pid_t, const telemetry::HotnessSource*>> Engine::sources() const {
  return sources_.running();
}

std::string Engine::workloadOf(pid_t pid) const {
  const std::optional<policy::WorkloadId> w = procs_.workloadOf(pid);
  if (!w || *w >= config_->workloads.size()) return "";
  return config_->workloads[*w].name;
}

}  // namespace tierd::daemon

#pragma once
/// \file
/// Simulator: replays a recorded sample trace (telemetry/hotness/Trace.h) through the production
/// tick engine (Engine.h) on a modelled machine, so an operator can tune a config before
/// deploying it (`tierctl simulate`, docs/simulate.md).
///
/// The model, in full:
///  - Machine: the topology fixture tree `topologyDir` (a captured /sys + /proc, e.g.
///    tests/fixtures/topology/qemu-2node), copied into a private temporary SysRoot. Its nodes'
///    MemFree is taken as the memory free *besides* the traced processes. The engine's topology
///    comes from the model (its TopologyProvider): the tree's topology, read once, with each
///    node's MemFree that value minus the modelled bytes on the node at the tick, so the engine
///    sees promotions fill the fast tier.
///  - Memory: each traced pid gets one THP-backed (2 MiB page) anonymous private mapping per run
///    of consecutive 2 MiB regions that hold at least one of its samples (vaddr rounded down to
///    2 MiB). Unsampled memory is not modelled (the trace cannot show it). Every region starts on
///    the slow tier, filling slow nodes in ascending id order (the trace header carries no
///    placement). The FakePageSystem's free THP capacity per node is the node's free memory
///    after that placement, so the modelled kernel refuses (-ENOMEM) what does not fit.
///  - Scope: every traced pid belongs to exactly one workload: the workload whose `pids` list
///    names it, else `defaultWorkload` (default: the config's first workload). The simulation
///    runs on a copy of the config whose selectors are replaced by those pid lists (cgroups and
///    command names of the recording machine do not exist in the model). The engine's scopes
///    come from the model (its ScopeProvider): a traced pid is in its workload while the traced
///    process holds it; the engine still reads each traced pid's /proc/PID/stat (identity) and
///    /proc/PID/status (allowed CPUs and nodes), written once under the SysRoot.
///  - Time: tick k runs at t0 + k * [daemon] interval, t0 = the first sample's time; its drain
///    returns the samples with time <= that. Ticks continue until the last sample is drained,
///    then `tailNs` longer. The migrator's clock is simulated: it is advanced to the tick's time
///    before the tick and each tick's migration deadline is one interval later.
///  - Migration: the production MovePagesMigrator engine on a FakePageSystem
///  (ModelKernelMigrator.h),
///    tuned by the config exactly as the daemon tunes it (Tuning.h migratorConfig()).
///  - Pid reuse (SimulationOptions::pidReuses, `tierctl simulate --reuse-pid PID@TIME`): in the
///    first tick at or after TIME, after its scope scan and plan and before its first move call
///    (after the tick when it makes none), the traced process PID exits and a new process gets
///    its pid, as the kernel hands out pids again once pid_max wraps: /proc/PID/stat shows a
///    later start time (field 22), and the model kernel answers for the new process's memory
///    (FakePageSystem::reusePid): the same mappings, each sampled region on the node the old
///    process's was on. The new holder is in no workload (a `pids` selector names the first
///    process it saw), so the trace's later samples of PID are never drained; its pages must
///    never move (SimSummary::newHolderMovedBytes).
///
/// Figures per tick: samples (and accesses: DAMON samples weigh their nr_accesses) whose page
/// was on a fast node when the tick drained them, i.e. before the tick's moves; bytes planned and
/// moved per direction; ping-pong moves (a move that reverses the region's previous move, which
/// itself reversed the one before, all three within `pingPongWindowNs`: up-down-up, down-up-down);
/// the engine's ping-pong guard holds; modelled bytes per tier and the fast tier's free memory
/// after the tick. Deterministic: same inputs, same result, byte for byte.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/Config.h"
#include "policy/PingPong.h"
#include "telemetry/hotness/Trace.h"
#include "tierd/core/Result.h"
#include "tierd/core/Types.h"

namespace tierd::daemon {

/// A modelled pid reuse (see the file comment).
struct SimPidReuse {
  pid_t pid = 0;      ///< a pid of the trace
  uint64_t atNs = 0;  ///< simulated time since t0 (the first sample), nanoseconds
};

/// Inputs of a simulation besides the trace and the config.
struct SimulationOptions {
  std::string topologyDir;      ///< topology fixture tree (a SysRoot), copied, never written
  std::string defaultWorkload;  ///< workload of pids no `pids` selector names ("" = first)
  uint64_t tailNs = 0;          ///< simulated time after the last sample, nanoseconds
  /// Window of a ping-pong (see the file comment; policy::kPingPongWindowNs, policy/PingPong.h).
  uint64_t pingPongWindowNs = policy::kPingPongWindowNs;
  std::vector<SimPidReuse> pidReuses;  ///< pid reuses to model (see the file comment)
  /// Names printed for the inputs (the paths as the operator gave them); never read.
  std::string traceLabel, configLabel, topologyLabel;
};

/// One traced process in the model.
struct SimProcess {
  pid_t pid = 0;
  std::string workload;       ///< workload name it was assigned to
  uint64_t samples = 0;       ///< samples of this pid in the trace
  uint64_t mappings = 0;      ///< modelled THP mappings (runs of sampled 2 MiB regions)
  uint64_t bytes = 0;         ///< modelled bytes (2 MiB per sampled region)
  uint64_t reusedAtTick = 0;  ///< tick in which a new process got its pid (0: never)
};

/// Figures of one tick (see the file comment). Bytes are bytes.
struct SimTick {
  uint64_t tick = 0;          ///< 1-based
  uint64_t timeNs = 0;        ///< tick time minus t0 (the first sample's time)
  uint64_t samples = 0;       ///< samples drained this tick
  uint64_t fastSamples = 0;   ///< ... whose page was on a fast-tier node
  uint64_t accesses = 0;      ///< sum of sample weights (DAMON) or samples (others)
  uint64_t fastAccesses = 0;  ///< ... on the fast tier
  uint64_t plannedPromoteBytes = 0;
  uint64_t plannedDemoteBytes = 0;
  uint64_t promotedBytes = 0;    ///< moved slow -> fast
  uint64_t demotedBytes = 0;     ///< moved fast -> slow
  uint64_t promotions = 0;       ///< ranges (regions) moved up
  uint64_t demotions = 0;        ///< ranges moved down
  uint64_t pingPongMoves = 0;    ///< moves reversing the region's previous move within the window
  uint64_t guardHolds = 0;       ///< regions the engine's ping-pong guard started holding
  uint64_t noMemoryPages = 0;    ///< pages the modelled kernel refused with -ENOMEM
  uint64_t unfinishedPages = 0;  ///< pages not attempted before the tick's deadline
  uint64_t fastBytes = 0;        ///< modelled bytes on fast-tier nodes after the tick
  uint64_t slowBytes = 0;        ///< modelled bytes on slow-tier nodes after the tick
  uint64_t fastFreeBytes = 0;    ///< MemFree summed over fast nodes after the tick
  /// Tracked pids the engine found naming a new process this tick (EngineTotals::pidReuses).
  uint64_t pidReuses = 0;
  /// Move calls the engine refused this tick: the pid no longer named the process they were
  /// planned for (EngineTotals::identityChecksFailed).
  uint64_t identityChecksFailed = 0;
};

/// Totals over the run.
struct SimSummary {
  uint64_t ticks = 0;
  uint64_t simulatedNs = 0;
  uint64_t samples = 0, fastSamples = 0, accesses = 0, fastAccesses = 0;
  uint64_t promotedBytes = 0, demotedBytes = 0, promotions = 0, demotions = 0;
  uint64_t pingPongMoves = 0, guardHolds = 0, noMemoryPages = 0, unfinishedPages = 0;
  uint64_t peakFastBytes = 0;     ///< most modelled bytes on the fast tier after any tick
  uint64_t minFastFreeBytes = 0;  ///< least fast-tier MemFree after any tick
  /// Share of accesses served by the fast tier in the last quarter of the ticks (at least one
  /// tick): where the policy converged.
  uint64_t lastQuarterAccesses = 0, lastQuarterFastAccesses = 0;
  uint64_t pidReuses = 0, identityChecksFailed = 0;  ///< sums of the ticks' counts
  /// Bytes of the new holders of reused pids not on the node they had when they got the pid
  /// after the last tick (tierd must never move them: 0).
  uint64_t newHolderMovedBytes = 0;
};

/// Everything a simulation reports.
struct SimulationResult {
  SimulationOptions options;
  std::string traceSource;  ///< the trace header's source
  uint64_t intervalNs = 0;
  uint64_t maxPromoteMiBPerS = 0, maxDemoteMiBPerS = 0;
  uint64_t fastHeadroomBytes = 0;  ///< [migration] fast_headroom resolved against the fast tier
  bool dryRun = false;
  std::string topologyMethod;
  std::vector<NodeId> fastNodes, slowNodes;
  uint64_t fastFreeAtStartBytes = 0;  ///< fast-tier MemFree before the first tick
  uint64_t regionBytes = 0;           ///< 2 MiB
  uint64_t modelledBytes = 0;         ///< all processes
  std::vector<SimProcess> processes;  ///< ascending pid
  std::vector<SimTick> ticks;
  SimSummary summary;
  std::vector<std::string> problems;  ///< distinct survived problems, in first-seen order
};

/// Runs the simulation. Errors: a pid reuse names a pid not in the trace, the trace has no
/// samples, the config has no workload, the
/// default workload does not exist, the topology cannot be read or has no fast or slow node,
/// the modelled memory does not fit on the slow tier, the temporary SysRoot cannot be made.
Result<SimulationResult> simulate(const telemetry::Trace& trace,
                                  const policy::CompiledConfig& config,
                                  const SimulationOptions& options);

/// The operator's view: a header describing model and config, one row per `rowTicks` ticks
/// (sums; on-fast share over the row; tier bytes at the row's end), then the summary.
std::string formatSimulationText(const SimulationResult& result, uint64_t rowTicks = 1);

/// The JSON document of docs/simulate.md ("format": "tierd-simulate", "version": 1). One entry
/// per tick regardless of the text view's row size.
nlohmann::json simulationJson(const SimulationResult& result);

}  // namespace tierd::daemon

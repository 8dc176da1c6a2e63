#pragma once
/// \file
/// Workload figures: what a tick's WorkloadReport and SourceState say about a workload's located
/// regions (bytes per tier, hot and cold bytes, each sampled process's heat) and about its moves
/// (planned, held, moved bytes). Pure: the regions come from the heat model (HeatModel::regions),
/// the moves from the plan and the migrator's batch. Depends on tierd_policy.

#include <sys/types.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "policy/Config.h"
#include "policy/TickContext.h"
#include "tierd/core/Migration.h"
#include "tierd/daemon/TickReport.h"

namespace tierd::daemon {

/// Adds the located regions of `view` (regions on no node skipped) to `wr`: fastBytes or
/// slowBytes by whether the region's node is in `fastNodes`, hot bytes (at or above the
/// process's policy::PromotionCut of `ctx` and `view`), cold bytes (at or below `coldThreshold`,
/// heat units). A region of a process with an entry in `states` also adds to that entry:
/// regions, maxHeat, cut, hot bytes, and meanHeat as a sum (finishSourceStates divides it).
void addRegionFigures(const policy::TickContext& ctx, const policy::WorkloadView& view,
                      double coldThreshold, const std::set<NodeId>& fastNodes, WorkloadReport& wr,
                      std::vector<SourceState>& states);
/// Turns each state's meanHeat from the sum addRegionFigures left into the mean over its regions.
void finishSourceStates(std::vector<SourceState>& states);

/// Adds to each workload of `workloads` (by name, `workloadOf(pid)`) the bytes of `planned`
/// (the executed batch's input: plannedPromoteBytes or plannedDemoteBytes), of `held` (the
/// arbiter's moves the operator held: heldBytes) and moved by `batch` (movedBytes). A pid whose
/// workload is not in `workloads` adds nothing.
void addMoveFigures(const std::vector<MoveRange>& planned, const std::vector<MoveRange>& held,
                    const BatchResult& batch, const std::function<std::string(pid_t)>& workloadOf,
                    std::vector<WorkloadReport>& workloads);

}  // namespace tierd::daemon

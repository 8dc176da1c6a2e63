#include "tierd/daemon/WorkloadFigures.h"

#include <algorithm>
#include <map>

#include "policy/Policy.h"

namespace tierd::daemon {
namespace {

// Adds located region `r` (on the fast tier when `onFast`) to its workload's figures and, when
// its process has a SourceState, to that process's: `cut` is the process's promotion cut,
// `cold` the workload's cold_threshold. SourceState::meanHeat is left a sum.
void accountRegion(const policy::RegionView& r, bool onFast, double cut, double cold,
                   WorkloadReport& wr, std::vector<SourceState>& states) {
  (onFast ? wr.fastBytes : wr.slowBytes) += r.length;
  const bool isHot = r.heat >= cut;
  if (isHot) (onFast ? wr.hotFastBytes : wr.hotSlowBytes) += r.length;
  if (r.heat <= cold) (onFast ? wr.coldFastBytes : wr.coldSlowBytes) += r.length;
  auto st = std::find_if(states.begin(), states.end(),
                         [&](const SourceState& s) { return s.pid == r.pid; });
  if (st == states.end()) return;
  ++st->regions;
  st->meanHeat += r.heat;  // a sum until finishSourceStates divides it
  st->maxHeat = std::max(st->maxHeat, r.heat);
  st->cut = cut;
  if (isHot) (onFast ? st->hotFastBytes : st->hotSlowBytes) += r.length;
}

}  // namespace

void addRegionFigures(const policy::TickContext& ctx, const policy::WorkloadView& view,
                      double coldThreshold, const std::set<NodeId>& fastNodes, WorkloadReport& wr,
                      std::vector<SourceState>& states) {
  const policy::PromotionCut hot(ctx, view);
  for (const policy::RegionView& r : view.regions) {
    if (r.node < 0) continue;
    accountRegion(r, fastNodes.count(r.node) != 0, hot.of(r.pid), coldThreshold, wr, states);
  }
}

void finishSourceStates(std::vector<SourceState>& states) {
  for (SourceState& st : states)
    if (st.regions) st.meanHeat /= static_cast<double>(st.regions);
}

void addMoveFigures(const std::vector<MoveRange>& planned, const std::vector<MoveRange>& held,
                    const BatchResult& batch, const std::function<std::string(pid_t)>& workloadOf,
                    std::vector<WorkloadReport>& workloads) {
  std::map<std::string, WorkloadReport*> byName;
  for (WorkloadReport& w : workloads)
    byName[w.name] = &w;
  auto of = [&](pid_t pid) -> WorkloadReport* {
    auto it = byName.find(workloadOf(pid));
    return it == byName.end() ? nullptr : it->second;
  };
  for (const MoveRange& m : planned)
    if (WorkloadReport* w = of(m.pid))
      (m.direction == Direction::Promote ? w->plannedPromoteBytes : w->plannedDemoteBytes) +=
          m.length;
  for (const MoveRange& m : held)
    if (WorkloadReport* w = of(m.pid)) w->heldBytes += m.length;
  for (const RangeResult& r : batch.ranges)
    if (WorkloadReport* w = of(r.range.pid)) w->movedBytes += r.bytesMoved;
}

}  // namespace tierd::daemon

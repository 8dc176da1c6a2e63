#include "tierd/core/Migration.h"

#include "tierd/core/Units.h"

namespace tierd {

namespace {
constexpr bool vocabularyInEnumOrder() {
  for (size_t i = 0; i < kMoveOutcomes.size(); ++i)
    if (kMoveOutcomes[i].outcome != static_cast<MoveOutcome>(i)) return false;
  return true;
}
static_assert(vocabularyInEnumOrder(), "kMoveOutcomes must list every MoveOutcome in enum order");
}  // namespace

const char* moveOutcomeName(MoveOutcome o) {
  return static_cast<size_t>(o) < kMoveOutcomes.size() ? moveOutcomeInfo(o).name : "unknown";
}

uint64_t OutcomeCounts::total() const {
  uint64_t n = 0;
  for (uint64_t p : pages)
    n += p;
  return n;
}

std::optional<MoveOutcome> dominantOutcome(const RangeResult& r) {
  const OutcomeCounts& c = r.outcomes;
  if (r.dropped || c[MoveOutcome::Gone] > 0) return MoveOutcome::Gone;
  // Outside the cpuset: back off (the arbiter plans inside Mems_allowed from the next tick on).
  if (c[MoveOutcome::NodeNotAllowed] > 0) return MoveOutcome::NodeNotAllowed;
  if (c[MoveOutcome::Denied] > 0) return MoveOutcome::Denied;
  if (c[MoveOutcome::NoMemory] > 0) return MoveOutcome::NoMemory;
  if (c[MoveOutcome::Busy] > 0 || !r.busy.empty() || c[MoveOutcome::NotMigrated] > 0)
    return MoveOutcome::Busy;
  if (c[MoveOutcome::Moved] > 0) return MoveOutcome::Moved;
  if (c[MoveOutcome::AlreadyThere] > 0) return MoveOutcome::AlreadyThere;
  return std::nullopt;
}

double MigrationStats::gibPerSecond() const {
  if (bytesMoved == 0 || wallNs <= 0) return 0;
  return static_cast<double>(bytesMoved) / static_cast<double>(kGiB) /
         (static_cast<double>(wallNs) / 1e9);
}

double MigrationStats::cpuSecondsPerGib() const {
  if (bytesMoved == 0) return 0;
  return (static_cast<double>(kernelCpuNs) / 1e9) /
         (static_cast<double>(bytesMoved) / static_cast<double>(kGiB));
}

std::vector<int> LocateResult::perBasePage(uint64_t basePageSize) const {
  std::vector<int> out;
  for (const auto& r : runs)
    out.insert(out.end(), r.length / basePageSize, r.status);
  return out;
}

}  // namespace tierd

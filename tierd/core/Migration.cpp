#include "tierd/core/Migration.h"

#include "tierd/core/Units.h"

namespace tierd {

const char* moveOutcomeName(MoveOutcome o) {
  switch (o) {
    case MoveOutcome::Moved:
      return "moved";
    case MoveOutcome::AlreadyThere:
      return "already_there";
    case MoveOutcome::NotPresent:
      return "not_present";
    case MoveOutcome::Busy:
      return "busy";
    case MoveOutcome::Gone:
      return "gone";
    case MoveOutcome::Denied:
      return "denied";
    case MoveOutcome::NoMemory:
      return "no_memory";
    case MoveOutcome::NotMigrated:
      return "not_migrated";
    case MoveOutcome::OtherError:
      return "other_error";
    case MoveOutcome::NotAttempted:
      return "not_attempted";
    case MoveOutcome::NodeNotAllowed:
      return "node_not_allowed";
  }
  return "unknown";
}

uint64_t OutcomeCounts::total() const {
  uint64_t n = 0;
  for (uint64_t p : pages)
    n += p;
  return n;
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

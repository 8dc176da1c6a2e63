#pragma once
/// \file
/// What happened to one planned range when the migrator executed it: the minimal per-range
/// result the policy needs to learn from (busy pages back off, vanished memory is dropped,
/// permanent refusals are held). The daemon's engine maps the migrator's per-range results
/// (tierd/core/Migration.h) onto this: one tierd::MoveOutcome per range (dominantOutcome), whose
/// PolicyReaction (the kMoveOutcomes vocabulary) says what the heat model does with it.

#include <sys/types.h>
#include <cstdint>

#include "tierd/core/Migration.h"
#include "tierd/core/Types.h"

namespace tierd::policy {

/// One executed range and its outcome. Fields as in the MoveRange that was planned.
struct RangeOutcome {
  pid_t pid = 0;
  uint64_t start = 0;   ///< bytes, virtual address
  uint64_t length = 0;  ///< bytes
  Direction direction = Direction::Promote;
  NodeId target = -1;
  MoveOutcome result = MoveOutcome::Moved;  ///< dominantOutcome of the range's RangeResult
};

}  // namespace tierd::policy

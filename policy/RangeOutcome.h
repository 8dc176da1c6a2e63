#pragma once
/// \file
/// What happened to one planned range when the migrator executed it: the minimal per-range
/// result the policy needs to learn from (busy pages back off, vanished memory is dropped,
/// permanent refusals are held). The daemon's engine maps the migrator's per-range results
/// (tierd/core/Migration.h, whose per-page status enum is tierd::MoveOutcome) onto this.

#include <sys/types.h>
#include <cstdint>

#include "tierd/core/Types.h"

namespace tierd::policy {

/// Outcome of one MoveRange (from move_pages(2) per-page status, see REFERENCE.md section 2).
enum class MoveResult {
  Moved,         ///< every page is now on the target node
  AlreadyThere,  ///< pages were already on the target (status == target before the call)
  Busy,          ///< -EBUSY / -EAGAIN: try again after the cooldown
  Gone,          ///< -ENOENT / -EFAULT / ESRCH: the memory or process no longer exists
  NoMemory,      ///< -ENOMEM: the target had no free page of that size
  Denied,        ///< -EACCES / -EPERM: will not succeed (shared page, no permission)
  /// The target is outside the task's cpuset.mems (call-level -EACCES, or the migrator read
  /// Mems_allowed first): backs off like Busy, since the cpuset may change; never held.
  NotAllowed,
};

/// One executed range and its outcome. Fields as in the MoveRange that was planned.
struct RangeOutcome {
  pid_t pid = 0;
  uint64_t start = 0;   ///< bytes, virtual address
  uint64_t length = 0;  ///< bytes
  Direction direction = Direction::Promote;
  NodeId target = -1;
  MoveResult result = MoveResult::Moved;
};

}  // namespace tierd::policy

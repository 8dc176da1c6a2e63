#pragma once
/// \file
/// PingPongTracker: the one definition of a *ping-pong move*, shared by `tierctl simulate`
/// (Simulator.cpp, docs/simulate.md) and the daemon's tierd_arbiter_pingpong_moves_total.
///
/// A ping-pong move takes a region back where it just came from: it reverses the region's
/// previous move, which itself reversed the one before, and all three moves fall within the
/// window (up-down-up or down-up-down). Promoting a region and demoting it once it cooled is not
/// ping-pong. The direction of every move is the one really executed (RangeResult with bytes
/// moved), never inferred. A region is identified by (pid, 2 MiB-aligned start of the moved
/// range). Time is passed in; nothing reads a clock. Not thread-safe: owned by the tick loop.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "tierd/core/Migration.h"
#include "tierd/core/Types.h"

namespace tierd::policy {

/// Default window of a ping-pong move: 60 s (`tierctl simulate --pingpong-window`; the daemon).
inline constexpr uint64_t kPingPongWindowNs = 60'000'000'000;

/// Ping-pong moves of one batch, by the direction of the move that closed the ping-pong.
struct PingPongCounts {
  uint64_t promote = 0;
  uint64_t demote = 0;
};

class PingPongTracker {
 public:
  /// `windowNs`: the three moves of a ping-pong must fall within it.
  explicit PingPongTracker(uint64_t windowNs = kPingPongWindowNs) : windowNs_(windowNs) {}

  /// Records one executed move of the region of `pid` at `start` (aligned down to 2 MiB) in
  /// direction `d` at `nowNs` (non-decreasing across calls). Returns true when it is a
  /// ping-pong move (see the file comment).
  bool record(pid_t pid, uint64_t start, Direction d, uint64_t nowNs);

  /// Records every range of a migrator result that moved bytes (RangeResult::bytesMoved > 0),
  /// at `nowNs`, and returns the ping-pong moves among them. Histories whose last move is older
  /// than the window are forgotten first (they can no longer be part of a ping-pong), so memory
  /// is bounded by the regions moved within one window.
  PingPongCounts recordBatch(const std::vector<RangeResult>& ranges, uint64_t nowNs);

  /// Regions with a remembered move.
  size_t regions() const { return history_.size(); }

 private:
  struct History {
    Direction last = Direction::Promote, beforeLast = Direction::Promote;
    uint64_t lastNs = 0, beforeLastNs = 0;
    uint64_t moves = 0;
  };
  void expire(uint64_t nowNs);

  uint64_t windowNs_;
  std::map<std::pair<pid_t, uint64_t>, History> history_;
};

}  // namespace tierd::policy

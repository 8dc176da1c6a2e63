#pragma once
/// \file
/// Settling: whether placement is settled (Engine::tick, "Settling"), from the bytes the plans of
/// the last kTicks ticks moved or would move against this tick's hot bytes, and how long the
/// daemon then waits before the next tick (daemon.settled_interval). Also the time a weighted
/// hotness source's rates cover after such a wait (policy::TickSpan). Pure: time and figures are
/// passed in; owned and called by one thread (the engine's). Depends on tierd_policy.

#include <cstdint>
#include <deque>

#include "policy/Config.h"
#include "policy/HeatModel.h"

namespace tierd::daemon {

/// One tick's settling verdict.
struct SettleVerdict {
  /// The plans of the last kTicks ticks, this one included, moved at most
  /// sampling.settle_trickle_percent of this tick's hot bytes.
  bool settled = false;
  /// Bytes the plans of the ticks in the window (at most kTicks, this one included) moved or
  /// would move.
  uint64_t windowBytes = 0;
  /// How long to wait before the next tick, ns: daemon.settled_interval when `settled` and that
  /// key is longer than daemon.interval, else daemon.interval.
  uint64_t nextIntervalNs = 0;
};

/// The settling window across ticks.
class Settling {
 public:
  /// Ticks whose plans settling looks at: 10 (10 s at the default 1 s interval), so one tick that
  /// planned nothing between two that did (a source's aggregation missing a tick) does not
  /// settle them.
  static constexpr uint64_t kTicks = 10;

  /// Adds the tick at `nowNs` (monotonic ns) whose plan moves or would move `plannedBytes`
  /// (promotions and demotions), with `hotBytes` (bytes at or above the promotion cut over every
  /// workload) located this tick. `counts`: samples were seen since the engine started and no
  /// process entered or left a scope this tick; a tick that does not count, or with no hot bytes
  /// (the sampler shows no contrast), empties the window and is not counted. `sampling` gives
  /// settle_trickle_percent, `daemon` interval and settled_interval.
  SettleVerdict add(uint64_t nowNs, uint64_t plannedBytes, uint64_t hotBytes, bool counts,
                    const policy::SamplingConfig& sampling, const policy::DaemonConfig& daemon);

  /// The time a weighted source's rates drained at `nowNs` cover: after a settled wait (the
  /// last add()'s nextIntervalNs longer than `intervalNs`, daemon.interval in ns) the time since
  /// that tick in intervals, never more than the wait asked for (a reload or an early wake ends
  /// it sooner); else one interval.
  policy::TickSpan spanAt(uint64_t nowNs, uint64_t intervalNs) const;

 private:
  /// Planned bytes of the last ticks since the count last started, newest last, at most kTicks.
  std::deque<uint64_t> window_;
  uint64_t lastTickNs_ = 0;          ///< the last add()'s nowNs, 0 before the first
  uint64_t lastNextIntervalNs_ = 0;  ///< ... and its nextIntervalNs
};

}  // namespace tierd::daemon

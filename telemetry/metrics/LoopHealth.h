#pragma once
/// \file
/// LoopHealth: whether the daemon's tick loop is alive, as /healthz reports it. The tick loop
/// calls tickDone() after every tick; the exporter's thread calls check() per request. Lock-free
/// (atomics), so a scrape never waits on the loop and a stalled loop cannot stall /healthz.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace tierd::telemetry {

/// The answer of /healthz: 200 with `detail` when `ok`, else 503 with it.
struct HealthVerdict {
  bool ok = false;
  std::string detail;  ///< one line, e.g. "ok: last tick 2.1 s ago"
};

/// The tick loop's liveness for /healthz: tickDone() from the loop, check() from any thread.
class LoopHealth {
 public:
  /// Monotonic: a wall-clock step neither stalls nor revives the loop.
  using Clock = std::chrono::steady_clock;

  /// A silent loop is healthy for at least this long (a tick that reads a large process's
  /// numa_maps, or the move step under a rate limit, can take seconds).
  static constexpr std::chrono::seconds kMinStaleAfter{30};
  /// ... and for this many of its own intervals (daemon.interval, longer while settled).
  static constexpr int kIntervalsStale = 3;
  /// Consecutive failed ticks (each logged with its error) that make the loop unhealthy.
  static constexpr int kFailedTicksUnhealthy = 3;

  /// The loop finished a tick at `now` (`ok`: the engine's tick succeeded) and waits
  /// `nextInterval` before the next one.
  void tickDone(Clock::time_point now, std::chrono::nanoseconds nextInterval, bool ok);

  /// The verdict at `now`: not ok before the first tick ("starting"), when no tick finished
  /// within max(kMinStaleAfter, kIntervalsStale x the last interval) ("stalled"), or after
  /// kFailedTicksUnhealthy failed ticks in a row; ok otherwise.
  HealthVerdict check(Clock::time_point now) const;

 private:
  std::atomic<int64_t> lastTickNs_{-1};  ///< steady clock at the last tick's end; -1: none yet
  std::atomic<int64_t> intervalNs_{0};
  std::atomic<int> failedStreak_{0};
};

}  // namespace tierd::telemetry

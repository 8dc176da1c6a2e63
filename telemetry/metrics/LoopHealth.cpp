#include "telemetry/metrics/LoopHealth.h"

#include <algorithm>
#include <cstdio>

namespace tierd::telemetry {

namespace {

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

void LoopHealth::tickDone(Clock::time_point now, std::chrono::nanoseconds nextInterval, bool ok) {
  intervalNs_.store(nextInterval.count(), std::memory_order_relaxed);
  failedStreak_.store(ok ? 0 : failedStreak_.load(std::memory_order_relaxed) + 1,
                      std::memory_order_relaxed);
  const int64_t nowNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  lastTickNs_.store(std::max<int64_t>(0, nowNs), std::memory_order_release);
}

HealthVerdict LoopHealth::check(Clock::time_point now) const {
  const int64_t last = lastTickNs_.load(std::memory_order_acquire);
  if (last < 0) return {false, "starting: no tick has finished yet"};
  const int64_t nowNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const int64_t silent = std::max<int64_t>(0, nowNs - last);
  const int64_t staleAfter = std::max<int64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(kMinStaleAfter).count(),
      kIntervalsStale * intervalNs_.load(std::memory_order_relaxed));
  if (silent > staleAfter)
    return {false, "stalled: the last tick finished " + seconds(silent) + " ago (limit " +
                       seconds(staleAfter) + ")"};
  const int failed = failedStreak_.load(std::memory_order_relaxed);
  if (failed >= kFailedTicksUnhealthy)
    return {false, "failing: the last " + std::to_string(failed) +
                       " ticks failed (their errors are in the log)"};
  return {true, "ok: the last tick finished " + seconds(silent) + " ago"};
}

}  // namespace tierd::telemetry

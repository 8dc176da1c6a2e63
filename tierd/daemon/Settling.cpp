#include "tierd/daemon/Settling.h"

#include <algorithm>
#include <numeric>

namespace tierd::daemon {

SettleVerdict Settling::add(uint64_t nowNs, uint64_t plannedBytes, uint64_t hotBytes, bool counts,
                            const policy::SamplingConfig& sampling,
                            const policy::DaemonConfig& daemon) {
  // No hot bytes: the sampler shows no contrast (a settled source sampling too coarsely to tell
  // hot from cold, or nothing sampled lately): nothing to settle on, and the count starts again
  // so the sources sample as before for kTicks ticks first.
  if (!counts || hotBytes == 0) {
    window_.clear();  // this tick does not count either
  } else {
    window_.push_back(plannedBytes);
    if (window_.size() > kTicks) window_.pop_front();
  }
  SettleVerdict v;
  v.windowBytes = std::accumulate(window_.begin(), window_.end(), uint64_t{0});
  v.settled = window_.size() == kTicks &&
              static_cast<double>(v.windowBytes) <=
                  sampling.settleTricklePercent / 100.0 * static_cast<double>(hotBytes);
  v.nextIntervalNs = v.settled && daemon.settledIntervalNs > daemon.intervalNs
                         ? daemon.settledIntervalNs
                         : daemon.intervalNs;
  lastTickNs_ = nowNs;
  lastNextIntervalNs_ = v.nextIntervalNs;
  return v;
}

policy::TickSpan Settling::spanAt(uint64_t nowNs, uint64_t intervalNs) const {
  policy::TickSpan span{1.0, intervalNs};
  if (lastNextIntervalNs_ > intervalNs && nowNs > lastTickNs_ && intervalNs > 0)
    span.ticks = static_cast<double>(std::min(nowNs - lastTickNs_, lastNextIntervalNs_)) /
                 static_cast<double>(intervalNs);
  return span;
}

}  // namespace tierd::daemon

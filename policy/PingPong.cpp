#include "policy/PingPong.h"

namespace tierd::policy {

namespace {
constexpr uint64_t kRegion = 2ULL << 20;
}  // namespace

bool PingPongTracker::record(pid_t pid, uint64_t start, Direction d, uint64_t nowNs) {
  History& h = history_[{pid, start & ~(kRegion - 1)}];
  const bool pingPong =
      h.moves >= 2 && h.last != d && h.beforeLast == d && nowNs - h.beforeLastNs <= windowNs_;
  h.beforeLast = h.last;
  h.beforeLastNs = h.lastNs;
  h.last = d;
  h.lastNs = nowNs;
  ++h.moves;
  return pingPong;
}

void PingPongTracker::expire(uint64_t nowNs) {
  // A history whose last move is older than the window cannot make the next move a ping-pong
  // (its move before last is older still), nor the one after (the next move's before-last
  // would be that old move): forgetting it changes no answer.
  std::erase_if(history_, [&](const auto& e) { return nowNs - e.second.lastNs > windowNs_; });
}

PingPongCounts PingPongTracker::recordBatch(const std::vector<RangeResult>& ranges,
                                            uint64_t nowNs) {
  expire(nowNs);
  PingPongCounts out;
  for (const RangeResult& r : ranges) {
    if (r.bytesMoved == 0) continue;
    if (record(r.range.pid, r.range.start, r.range.direction, nowNs))
      ++(r.range.direction == Direction::Promote ? out.promote : out.demote);
  }
  return out;
}

}  // namespace tierd::policy

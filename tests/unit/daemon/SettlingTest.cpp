#include <doctest/doctest.h>

#include "tierd/daemon/Settling.h"

using namespace tierd;
using namespace tierd::daemon;

namespace {
constexpr uint64_t kSec = 1'000'000'000;

struct Configs {
  policy::SamplingConfig sampling;
  policy::DaemonConfig daemon;
  Configs() {
    sampling.settleTricklePercent = 2.0;
    daemon.intervalNs = kSec;
    daemon.settledIntervalNs = 5 * kSec;
  }
};
}  // namespace

TEST_CASE("Settling: settled after kTicks counted ticks whose plans stay under the trickle") {
  Configs cfg;
  Settling s;
  const uint64_t hot = 1000;
  for (uint64_t t = 1; t < Settling::kTicks; ++t) {
    const SettleVerdict v = s.add(t * kSec, 1, hot, true, cfg.sampling, cfg.daemon);
    CHECK_FALSE(v.settled);
    CHECK(v.windowBytes == t);
    CHECK(v.nextIntervalNs == kSec);
  }
  SettleVerdict v = s.add(Settling::kTicks * kSec, 1, hot, true, cfg.sampling, cfg.daemon);
  CHECK(v.settled);  // 10 bytes <= 2 % of 1000
  CHECK(v.windowBytes == Settling::kTicks);
  CHECK(v.nextIntervalNs == 5 * kSec);
  // A plan over the trickle unsettles; the window keeps the last kTicks plans.
  v = s.add(11 * kSec, 15, hot, true, cfg.sampling, cfg.daemon);
  CHECK_FALSE(v.settled);
  CHECK(v.windowBytes == 9 + 15);
  // A tick that does not count, or with no hot bytes, empties the window.
  v = s.add(12 * kSec, 0, hot, false, cfg.sampling, cfg.daemon);
  CHECK(v.windowBytes == 0);
  CHECK_FALSE(v.settled);
  v = s.add(13 * kSec, 0, hot, true, cfg.sampling, cfg.daemon);
  CHECK(v.windowBytes == 0);
  v = s.add(14 * kSec, 0, 0, true, cfg.sampling, cfg.daemon);
  CHECK(v.windowBytes == 0);
  CHECK_FALSE(v.settled);
}

TEST_CASE("Settling: a settled interval no longer than daemon.interval keeps the interval") {
  Configs cfg;
  cfg.daemon.settledIntervalNs = 0;
  Settling s;
  SettleVerdict v;
  for (uint64_t t = 1; t <= Settling::kTicks; ++t)
    v = s.add(t * kSec, 0, 100, true, cfg.sampling, cfg.daemon);
  CHECK(v.settled);
  CHECK(v.nextIntervalNs == kSec);
}

TEST_CASE("Settling::spanAt: a settled wait's time in intervals, capped at the wait asked for") {
  Configs cfg;
  Settling s;
  CHECK(s.spanAt(kSec, kSec).ticks == 1.0);  // before any tick
  CHECK(s.spanAt(kSec, kSec).tickNs == kSec);
  for (uint64_t t = 1; t <= Settling::kTicks; ++t)
    s.add(t * kSec, 0, 100, true, cfg.sampling, cfg.daemon);
  CHECK(s.spanAt(13 * kSec, kSec).ticks == doctest::Approx(3.0));  // woken early: 3 s
  CHECK(s.spanAt(20 * kSec, kSec).ticks == doctest::Approx(5.0));  // never more than 5 s
  CHECK(s.spanAt(10 * kSec, kSec).ticks == 1.0);                   // no time passed
  s.add(20 * kSec, 50, 100, true, cfg.sampling, cfg.daemon);       // unsettled: 1 s next
  CHECK(s.spanAt(25 * kSec, kSec).ticks == 1.0);
}

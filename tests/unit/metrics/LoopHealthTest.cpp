// /healthz's verdict (LoopHealth) over a loop that starts, ticks, stalls and fails, and the
// process_* metrics parsed from /proc/PID/stat as proc(5) lays it out.

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "telemetry/metrics/LoopHealth.h"
#include "telemetry/metrics/ProcessMetrics.h"

using namespace tierd::telemetry;
using namespace std::chrono_literals;

TEST_CASE("the loop is unhealthy before its first tick, after a stall and after failed ticks") {
  LoopHealth h;
  const auto t0 = LoopHealth::Clock::time_point{} + 1000s;
  HealthVerdict v = h.check(t0);
  CHECK_FALSE(v.ok);
  CHECK(v.detail.find("starting") == 0);

  h.tickDone(t0, 1s, true);
  CHECK(h.check(t0 + 1s).ok);
  CHECK(h.check(t0 + 30s).ok);  // a slow tick is not a stall: at least 30 s of grace
  v = h.check(t0 + 31s);
  CHECK_FALSE(v.ok);
  CHECK(v.detail == "stalled: the last tick finished 31.0 s ago (limit 30.0 s)");

  // A long (settled) interval stretches the limit to three intervals.
  h.tickDone(t0 + 40s, 20s, true);
  CHECK(h.check(t0 + 99s).ok);
  CHECK_FALSE(h.check(t0 + 101s).ok);

  // Two failed ticks are tolerated, the third in a row is not; one success clears the streak.
  const auto t1 = t0 + 200s;
  h.tickDone(t1, 1s, false);
  h.tickDone(t1 + 1s, 1s, false);
  CHECK(h.check(t1 + 2s).ok);
  h.tickDone(t1 + 2s, 1s, false);
  v = h.check(t1 + 3s);
  CHECK_FALSE(v.ok);
  CHECK(v.detail == "failing: the last 3 ticks failed (their errors are in the log)");
  h.tickDone(t1 + 3s, 1s, true);
  v = h.check(t1 + 3500ms);
  CHECK(v.ok);
  CHECK(v.detail == "ok: the last tick finished 0.5 s ago");
}

TEST_CASE("/proc/PID/stat is parsed after the last ')' of the command") {
  // proc(5): pid (comm) state ppid ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24)
  const std::string stat =
      "4242 (tier d) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 12345 "
      "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto s = parseProcStat(stat, 100, 4096, 1.7e9);
  REQUIRE(s);
  CHECK(s->cpuSeconds == doctest::Approx(3.0));
  CHECK(s->startTimeSeconds == doctest::Approx(1.7e9 + 123.45));
  CHECK(s->virtualBytes == doctest::Approx(104857600.0));
  CHECK(s->residentBytes == doctest::Approx(2560.0 * 4096));

  CHECK_FALSE(parseProcStat("4242 (tierd) S 1 2 3", 100, 4096, 0));
  CHECK_FALSE(parseProcStat("no parenthesis at all", 100, 4096, 0));
  CHECK_FALSE(parseProcStat(stat, 0, 4096, 0));
  const std::string garbled =
      "1 (x) S 1 1 1 0 -1 0 0 0 0 0 ab 50 0 0 20 0 3 0 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
  CHECK_FALSE(parseProcStat(garbled, 100, 4096, 0));
}

TEST_CASE("this process's metrics read from /proc/self") {
  const std::string text = processMetricsText();
  for (const char* line :
       {"# TYPE process_cpu_seconds_total counter\n",
        "# TYPE process_resident_memory_bytes gauge\n", "# TYPE process_open_fds gauge\n"})
    CHECK_MESSAGE(text.find(line) != std::string::npos, line);
  const size_t rss = text.find("\nprocess_resident_memory_bytes ");
  REQUIRE(rss != std::string::npos);
  CHECK(std::stod(text.substr(rss + 31)) > 1 << 20);  // a running test binary holds > 1 MiB
}

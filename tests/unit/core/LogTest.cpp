#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tierd/core/Log.h"

using namespace tierd;

namespace {
struct Capture {
  std::vector<std::string> lines;
  Logger::Writer writer() {
    return [this](std::string_view l) { lines.emplace_back(l); };
  }
};
constexpr uint64_t kSec = 1'000'000'000;
}  // namespace

TEST_CASE("levels filter and format for a terminal and for the journal") {
  Capture c;
  Logger plain({LogLevel::Info, false}, c.writer());
  CHECK(plain.log(LogLevel::Warning, "node 1 is full", 0));
  CHECK_FALSE(plain.log(LogLevel::Debug, "noise", 0));
  CHECK(plain.log(LogLevel::Error, "move_pages failed", 0));
  CHECK(plain.log(LogLevel::Info, "tick 3: promoted=0B", 0));
  Logger journal({LogLevel::Debug, true}, c.writer());
  CHECK(journal.log(LogLevel::Debug, "tick 1", 0));
  CHECK(journal.log(LogLevel::Notice, "reloaded", 0));
  CHECK(c.lines == std::vector<std::string>{
                       "tierd: warning: node 1 is full\n", "tierd: error: move_pages failed\n",
                       "tierd: tick 3: promoted=0B\n", "<7>tick 1\n", "<5>reloaded\n"});
  LogLevel l{};
  CHECK(parseLogLevel("warning", l));
  CHECK(l == LogLevel::Warning);
  CHECK_FALSE(parseLogLevel("loud", l));
}

TEST_CASE("identical messages are rate-limited per window and the suppressed count reported") {
  Capture c;
  Logger::Options o;
  o.burst = 2;
  o.windowNs = 10 * kSec;
  Logger log(o, c.writer());
  const std::string msg = "move_pages pid 42: EBUSY";
  CHECK(log.log(LogLevel::Error, msg, 0));
  CHECK(log.log(LogLevel::Error, msg, 1 * kSec));
  CHECK_FALSE(log.log(LogLevel::Error, msg, 2 * kSec));
  CHECK_FALSE(log.log(LogLevel::Error, msg, 3 * kSec));
  CHECK_FALSE(log.log(LogLevel::Error, msg, 9 * kSec));
  // a different message is not affected
  CHECK(log.log(LogLevel::Error, "other message", 9 * kSec));
  // the same text at another level is another key
  CHECK(log.log(LogLevel::Warning, msg, 9 * kSec));
  CHECK(log.suppressedTotal() == 3);
  // a new window lets it through with the count
  CHECK(log.log(LogLevel::Error, msg, 10 * kSec));
  CHECK(c.lines.back() == "tierd: error: " + msg + " (3 similar messages suppressed)\n");
  CHECK(log.log(LogLevel::Error, msg, 11 * kSec));
  CHECK(c.lines.back() == "tierd: error: " + msg + "\n");
  CHECK(c.lines.size() == 6);
}

TEST_CASE("the limiter tracks a bounded number of keys") {
  Capture c;
  Logger::Options o;
  o.burst = 1;
  o.maxKeys = 2;
  Logger log(o, c.writer());
  CHECK(log.log(LogLevel::Error, "a", 0));
  CHECK_FALSE(log.log(LogLevel::Error, "a", 1));
  CHECK(log.log(LogLevel::Error, "b", 2));
  CHECK(log.log(LogLevel::Error, "c", 3));  // evicts "a"
  CHECK(log.log(LogLevel::Error, "a", 4));  // forgotten, so let through again
}

TEST_CASE("JOURNAL_STREAM must name stderr's device and inode") {
  ::unsetenv("JOURNAL_STREAM");
  CHECK_FALSE(stderrIsJournal());
  ::setenv("JOURNAL_STREAM", "1:1", 1);
  CHECK_FALSE(stderrIsJournal());
  ::setenv("JOURNAL_STREAM", "garbage", 1);
  CHECK_FALSE(stderrIsJournal());
  ::unsetenv("JOURNAL_STREAM");
}

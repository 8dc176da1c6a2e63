#pragma once
/// \file
/// Leveled logging to stderr, which journald collects when tierd runs as a service. When stderr
/// is the journal (JOURNAL_STREAM names stderr's device:inode, systemd.exec(5)), each line starts
/// with a `<N>` syslog priority prefix (sd-daemon(3)) so journald records the level; otherwise
/// lines read "tierd: warning: ..." (error, warning, debug) or "tierd: ..." (notice, info: the
/// daemon's progress lines, which scripts read by their "tierd: tick N:" prefix). Identical
/// messages are rate-limited per key (level + text): at most `burst` per `window`; the rest are
/// counted and reported as "(N similar messages suppressed)" with the next one let through. Time is
/// passed in (monotonic nanoseconds), so the limiter is tested without a clock. Thread-safe.

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace tierd {

/// Syslog priorities (the numbers are the `<N>` prefixes).
enum class LogLevel { Error = 3, Warning = 4, Notice = 5, Info = 6, Debug = 7 };

/// "error", "warning", "notice", "info", "debug".
const char* logLevelName(LogLevel level);

/// Parses a level name (as above); nullopt-like false when unknown.
bool parseLogLevel(std::string_view name, LogLevel& out);

/// True when stderr is connected to the journal: JOURNAL_STREAM="<dev>:<ino>" matches fstat(2).
bool stderrIsJournal();

class Logger {
 public:
  struct Options {
    LogLevel minLevel = LogLevel::Info;  ///< messages less severe than this are dropped
    bool journal = false;                ///< prefix lines with "<N>" instead of "tierd: level: "
    uint64_t windowNs = 10'000'000'000;  ///< rate-limit window per message key (10 s)
    uint32_t burst = 5;                  ///< messages of one key let through per window
    size_t maxKeys = 256;                ///< keys tracked; the least recently used is forgotten
  };
  /// Writes each finished line (with its trailing newline) to `write`.
  using Writer = std::function<void(std::string_view line)>;

  /// A logger writing to `write` (default: stderr, unbuffered).
  explicit Logger(Options options, Writer write = {});

  /// Logs `message` (one line, no newline) at `level`, at monotonic time `nowNs`.
  /// Returns true when written, false when filtered by level or suppressed by the rate limit.
  bool log(LogLevel level, std::string_view message, uint64_t nowNs);

  /// Changes the least severe level written from now on (daemon.log_level on a reload).
  void setMinLevel(LogLevel level);

  /// Messages suppressed by the rate limit so far (all keys).
  uint64_t suppressedTotal() const;

 private:
  struct KeyState {
    uint64_t windowStart = 0;
    uint32_t inWindow = 0;
    uint64_t suppressed = 0;  ///< since the last message of this key was written
    std::list<std::string>::iterator lru;
  };
  void emit(LogLevel level, std::string_view message);

  Options options_;
  Writer write_;
  mutable std::mutex mutex_;
  std::map<std::string, KeyState> keys_;
  std::list<std::string> lru_;  ///< most recent first
  uint64_t suppressedTotal_ = 0;
};

}  // namespace tierd

#include "tierd/core/Log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tierd {

const char* logLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warning:
      return "warning";
    case LogLevel::Notice:
      return "notice";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "info";
}

void Logger::setMinLevel(LogLevel level) {
  std::lock_guard<std::mutex> lock(mutex_);
  options_.minLevel = level;
}

bool parseLogLevel(std::string_view name, LogLevel& out) {
  for (LogLevel l :
       {LogLevel::Error, LogLevel::Warning, LogLevel::Notice, LogLevel::Info, LogLevel::Debug})
    if (name == logLevelName(l)) {
      out = l;
      return true;
    }
  return false;
}

bool stderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

Logger::Logger(Options options, Writer write) : options_(options), write_(std::move(write)) {
  if (!write_)
    write_ = [](std::string_view line) {
      // One write(2) per line so lines from several threads do not interleave.
      ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
      (void)unused;
    };
}

void Logger::emit(LogLevel level, std::string_view message) {
  std::string line;
  if (options_.journal)
    line = "<" + std::to_string(static_cast<int>(level)) + ">";
  else if (level == LogLevel::Info || level == LogLevel::Notice)
    line = "tierd: ";
  else
    line = std::string("tierd: ") + logLevelName(level) + ": ";
  line.append(message);
  line.push_back('\n');
  write_(line);
}

bool Logger::log(LogLevel level, std::string_view message, uint64_t nowNs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int>(level) > static_cast<int>(options_.minLevel)) return false;
  std::string key = std::to_string(static_cast<int>(level)) + "|" + std::string(message);
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= options_.maxKeys && !lru_.empty()) {
      keys_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    it = keys_.emplace(key, KeyState{nowNs, 0, 0, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  KeyState& s = it->second;
  if (nowNs - s.windowStart >= options_.windowNs || nowNs < s.windowStart) {
    s.windowStart = nowNs;
    s.inWindow = 0;
  }
  if (s.inWindow >= options_.burst) {
    ++s.suppressed;
    ++suppressedTotal_;
    return false;
  }
  ++s.inWindow;
  if (s.suppressed > 0) {
    emit(level, std::string(message) + " (" + std::to_string(s.suppressed) +
                    " similar messages suppressed)");
    s.suppressed = 0;
  } else {
    emit(level, message);
  }
  return true;
}

uint64_t Logger::suppressedTotal() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressedTotal_;
}

}  // namespace tierd

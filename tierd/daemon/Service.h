#pragma once
/// \file
/// systemd service protocol for tierd (config/tierd.service, Type=notify): a thin wrapper over
/// libsystemd's sd_notify(3) and sd_watchdog_enabled(3). When tierd is not started by systemd
/// (NOTIFY_SOCKET unset) every call is a no-op returning Ok, so the daemon loop calls them
/// unconditionally:
///   - ready()      once, after the config is loaded, the exporter listens and the first tick ran;
///   - reloading()  on SIGHUP before compiling the new config, then ready() again when done
///                  (success or failure: the last good config stays);
///   - stopping()   on SIGTERM/SIGINT before the loop winds down;
///   - watchdog()   every watchdogInterval() (half of WATCHDOG_USEC) from the tick loop, only
///                  when the loop is healthy;
///   - status()     free text shown by `systemctl status` ("tick 42, 3 workloads, dry run").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tierd/core/Result.h"

namespace tierd::service {

class ServiceNotifier {
 public:
  /// Reads NOTIFY_SOCKET and WATCHDOG_USEC/WATCHDOG_PID from the environment (not unset).
  static ServiceNotifier fromEnvironment();

  /// True when a notification socket is configured (running under systemd Type=notify).
  bool enabled() const { return enabled_; }
  /// How often to call watchdog(): half of WATCHDOG_USEC; nullopt when no watchdog is armed.
  std::optional<std::chrono::microseconds> watchdogInterval() const { return watchdog_; }

  /// "READY=1" plus an optional STATUS=.
  Status ready(std::string_view statusText = {}) const;
  /// "RELOADING=1" with "MONOTONIC_USEC=<CLOCK_MONOTONIC now>" (required by systemd >= 253's
  /// Type=notify-reload, ignored by older ones).
  Status reloading() const;
  /// "STOPPING=1".
  Status stopping() const;
  /// "WATCHDOG=1" (no-op when no watchdog is armed).
  Status watchdog() const;
  /// "STATUS=<text>" (newlines are replaced by blanks).
  Status status(std::string_view text) const;

  /// Sends an arbitrary newline-separated assignment list; Error carries sd_notify's errno.
  Status notify(const std::string& message) const;

 private:
  bool enabled_ = false;
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace tierd::service

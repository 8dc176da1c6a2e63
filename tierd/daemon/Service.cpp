#include "tierd/daemon/Service.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdlib>

#include "tierd/core/Clock.h"

namespace tierd::service {

ServiceNotifier ServiceNotifier::fromEnvironment() {
  ServiceNotifier n;
  const char* sock = std::getenv("NOTIFY_SOCKET");
  n.enabled_ = sock && *sock;
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
    n.watchdog_ = std::chrono::microseconds(usec / 2);
  return n;
}

Status ServiceNotifier::notify(const std::string& message) const {
  if (!enabled_) return Ok{};
  int rc = sd_notify(0, message.c_str());
  if (rc < 0) return Error::sys(-rc, "sd_notify failed", "NOTIFY_SOCKET");
  return Ok{};
}

Status ServiceNotifier::ready(std::string_view statusText) const {
  std::string m = "READY=1";
  if (!statusText.empty()) {
    std::string s(statusText);
    for (char& c : s)
      if (c == '\n') c = ' ';
    m += "\nSTATUS=" + s;
  }
  return notify(m);
}

Status ServiceNotifier::reloading() const {
  const uint64_t usec = monotonicNs() / 1000;
  return notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

Status ServiceNotifier::stopping() const {
  return notify("STOPPING=1");
}

Status ServiceNotifier::watchdog() const {
  if (!watchdog_) return Ok{};
  return notify("WATCHDOG=1");
}

Status ServiceNotifier::status(std::string_view text) const {
  std::string s(text);
  for (char& c : s)
    if (c == '\n') c = ' ';
  return notify("STATUS=" + s);
}

}  // namespace tierd::service

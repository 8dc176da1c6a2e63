#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tierd/daemon/Service.h"

using namespace tierd::service;

namespace {
// A datagram socket standing in for systemd's notification socket.
struct FakeNotifySocket {
  std::string dir;
  std::string path;
  int fd = -1;
  FakeNotifySocket() {
    char name[] = "/tmp/tierd-notify-XXXXXX";
    REQUIRE(::mkdtemp(name));
    dir = name;
    path = dir + "/notify";
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  }
  ~FakeNotifySocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
    ::close(fd);
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
  // The next message (sd_notify sends synchronously, so it is already queued).
  std::string next() {
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
};
}  // namespace

TEST_CASE("without NOTIFY_SOCKET every notification is a successful no-op") {
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  auto n = ServiceNotifier::fromEnvironment();
  CHECK_FALSE(n.enabled());
  CHECK_FALSE(n.watchdogInterval().has_value());
  CHECK(n.ready().ok());
  CHECK(n.stopping().ok());
}

TEST_CASE("READY, RELOADING with MONOTONIC_USEC, STATUS and STOPPING reach the socket") {
  FakeNotifySocket s;
  auto n = ServiceNotifier::fromEnvironment();
  REQUIRE(n.enabled());
  CHECK(n.ready("3 workloads\ndry run").ok());
  CHECK(s.next() == "READY=1\nSTATUS=3 workloads dry run");
  CHECK(n.reloading().ok());
  const std::string r = s.next();
  CHECK(r.rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
  CHECK(std::strtoull(r.substr(r.find('=', 12) + 1).c_str(), nullptr, 10) > 0);
  CHECK(n.status("tick 7").ok());
  CHECK(s.next() == "STATUS=tick 7");
  CHECK(n.watchdog().ok());  // no watchdog armed: nothing sent
  CHECK(n.stopping().ok());
  CHECK(s.next() == "STOPPING=1");
  CHECK(s.next().empty());
}

TEST_CASE("WATCHDOG_USEC for this pid arms the watchdog at half the interval") {
  FakeNotifySocket s;
  ::setenv("WATCHDOG_USEC", "20000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  auto n = ServiceNotifier::fromEnvironment();
  REQUIRE(n.watchdogInterval().has_value());
  CHECK(n.watchdogInterval()->count() == 10000000);
  CHECK(n.watchdog().ok());
  CHECK(s.next() == "WATCHDOG=1");
  ::setenv("WATCHDOG_PID", "1", 1);  // meant for another process
  CHECK_FALSE(ServiceNotifier::fromEnvironment().watchdogInterval().has_value());
}

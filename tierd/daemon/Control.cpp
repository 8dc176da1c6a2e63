#include "tierd/daemon/Control.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierd::daemon {
namespace {

constexpr size_t kMaxAnswerBytes = 16u << 20;
constexpr int kRequestTimeoutMs = 2000;  // a peer that sends no line in time is dropped

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

Result<sockaddr_un> socketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error::input(
        "socket path must be 1.." + std::to_string(sizeof addr.sun_path - 1) + " bytes", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

std::string errorJson(const std::string& message) {
  return nlohmann::json{{"ok", false}, {"error", message}}.dump();
}

// Waits for `fd` to be readable (or writable) for at most `ms`; false on timeout or error.
bool waitFd(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r = 0;
  do {
    r = ::poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  return r == 1;
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && waitFd(fd, POLLOUT, kRequestTimeoutMs)) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// A socket file at `path` that nothing serves (connect refused) may be replaced; anything else
// (a file, a live tierd, one too busy to accept: EAGAIN) is refused. The probe never blocks.
Status clearStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};
    return Error::fromErrno("lstat", path);
  }
  if (!S_ISSOCK(st.st_mode)) return Error::env("exists and is not a socket", path);
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (probe < 0) return Error::fromErrno("socket", path);
  const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int e = errno;
  ::close(probe);
  if (rc == 0 || e == EAGAIN) return Error::env("another process serves this control socket", path);
  if (e != ECONNREFUSED) return Error::sys(e, "connect to the socket there", path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Error::fromErrno("unlink", path);
  return Ok{};
}

// The socket's directory must be one only its owner (root or tierd's user) can change: another
// user who could write there could replace the socket with their own.
Status checkDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Error::fromErrno("stat", dir);
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return Error::env("the socket's directory is owned by uid " + std::to_string(st.st_uid) +
                          ", neither root nor tierd's user",
                      dir);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return Error::env("the socket's directory is writable by group or others", dir);
  return Ok{};
}

int remainingMs(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

}  // namespace

Result<ControlRequest> parseControlRequest(std::string_view line) {
  const std::vector<std::string> w = words(line);
  if (w.empty()) return Error::input("empty request", "control");
  ControlRequest r;
  const std::string& verb = w[0];
  if (verb == "status") {
    r.verb = ControlRequest::Verb::Status;
  } else if (verb == "pause") {
    r.verb = ControlRequest::Verb::Pause;
  } else if (verb == "resume") {
    r.verb = ControlRequest::Verb::Resume;
  } else if (verb == "restore") {
    r.verb = ControlRequest::Verb::Restore;
  } else {
    return Error::input("unknown request '" + verb + "' (status, pause, resume, restore)",
                        "control");
  }
  const size_t most = r.verb == ControlRequest::Verb::Status ? 1 : 2;
  if (w.size() > most) return Error::input("'" + verb + "': too many arguments", "control");
  if (w.size() == 2) r.workload = w[1];
  if (r.verb == ControlRequest::Verb::Restore && r.workload.empty())
    return Error::input("'restore' needs a workload name", "control");
  return r;
}

std::string formatControlRequest(const ControlRequest& request) {
  static constexpr const char* kVerbs[] = {"status", "pause", "resume", "restore"};
  std::string line = kVerbs[static_cast<int>(request.verb)];
  if (!request.workload.empty()) line += " " + request.workload;
  return line;
}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& path,
                                                            Handler handler) {
  auto addr = socketAddress(path);
  if (!addr) return addr.error();
  if (Status st = checkDirectory(path); !st) return st.error();
  if (Status st = clearStaleSocket(path, *addr); !st) return st.error();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error::fromErrno("socket", path);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    const int e = errno;
    ::close(fd);
    return Error::sys(e, "bind", path);
  }
  // 0600 before listen(): nobody connects before it (connecting needs write permission on the
  // socket file, and the directory is its owner's alone: checkDirectory).
  if (::chmod(path.c_str(), 0600) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return Error::sys(e, "chmod 0600", path);
  }
  if (::listen(fd, 8) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return Error::sys(e, "listen", path);
  }
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return Error::sys(e, "eventfd", path);
  }
  return std::unique_ptr<ControlServer>(new ControlServer(path, fd, wake, std::move(handler)));
}

ControlServer::ControlServer(std::string path, int listenFd, int wakeFd, Handler handler)
    : path_(std::move(path)), listenFd_(listenFd), wakeFd_(wakeFd), handler_(std::move(handler)) {
  thread_ = std::thread([this] { serve(); });
}

ControlServer::~ControlServer() {
  const uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(listenFd_);
  ::close(wakeFd_);
  ::unlink(path_.c_str());
}

void ControlServer::serve() {
  for (;;) {
    pollfd p[2] = {{listenFd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors or memory: the connection stays queued and poll() would report it at
      // once, forever; wait a little (or for the stop) instead of spinning.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        pollfd w{wakeFd_, POLLIN, 0};
        if (::poll(&w, 1, 100) > 0) return;
      }
      continue;
    }
    answer(fd);
    ::close(fd);
  }
}

void ControlServer::answer(int fd) {
  // The request is read first, whoever sent it: closing a socket with unread data resets the
  // connection, and the peer would see ECONNRESET instead of the answer.
  std::string line;
  char buf[512];
  bool tooLong = false;
  // One deadline for the whole request: a peer trickling bytes cannot hold the server.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  while (line.find('\n') == std::string::npos) {
    if (!waitFd(fd, POLLIN, remainingMs(deadline))) return;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // a request without its newline still counts at EOF
    line.append(buf, static_cast<size_t>(n));
    if (line.size() > kControlMaxRequestBytes) {
      tooLong = true;
      break;
    }
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      (cred.uid != 0 && cred.uid != ::geteuid())) {
    refused_.fetch_add(1);
    (void)writeAll(fd, errorJson("permission denied: the control socket answers root only") + "\n");
    return;
  }
  if (tooLong) {
    (void)writeAll(
        fd, errorJson("request longer than " + std::to_string(kControlMaxRequestBytes) + " bytes") +
                "\n");
    return;
  }
  line = line.substr(0, line.find('\n'));
  auto request = parseControlRequest(line);
  const std::string reply = request ? handler_(*request) : errorJson(request.error().describe());
  (void)writeAll(fd, reply + "\n");
}

Result<std::string> controlCall(const std::string& path, const ControlRequest& request,
                                int timeoutMs) {
  auto addr = socketAddress(path);
  if (!addr) return addr.error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error::fromErrno("socket", path);
  // Non-blocking: a tierd whose queue is full (EAGAIN) is tried again until the deadline.
  while (::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    const int e = errno;
    if ((e == EAGAIN || e == EINTR) && remainingMs(deadline) > 0) {
      ::usleep(10'000);
      continue;
    }
    ::close(fd);
    return Error::sys(e, "connect (is tierd running, with daemon.control_socket here?)", path);
  }
  if (!writeAll(fd, formatControlRequest(request) + "\n")) {
    const int e = errno;
    ::close(fd);
    return Error::sys(e, "send", path);
  }
  std::string answer;
  char buf[4096];
  for (;;) {
    if (!waitFd(fd, POLLIN, remainingMs(deadline))) {
      ::close(fd);
      return Error::sys(ETIMEDOUT, "no answer within " + std::to_string(timeoutMs) + " ms", path);
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > kMaxAnswerBytes) {
      ::close(fd);
      return Error::input("answer longer than 16 MiB", path);
    }
  }
  ::close(fd);
  while (!answer.empty() && answer.back() == '\n')
    answer.pop_back();
  if (answer.empty()) return Error::sys(ECONNRESET, "tierd closed without an answer", path);
  return answer;
}

}  // namespace tierd::daemon

#include "telemetry/metrics/MetricsHttpServer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <list>
#include <thread>
#include <vector>

namespace tierd::telemetry {

namespace {

using Clock = std::chrono::steady_clock;

// Compares without an early exit so the time taken does not reveal the matching prefix.
bool constantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::optional<std::string> base64Decode(const std::string& in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const size_t v = kAlphabet.find(in[i]);
    if (v == std::string::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') return std::nullopt;
  return out;
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string response(const std::string& status, const std::string& extraHeaders,
                     const std::string& contentType, const std::string& body, bool withBody) {
  std::string r = "HTTP/1.1 " + status + "\r\nContent-Type: " + contentType +
                  "\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n" + extraHeaders + "\r\n";
  if (withBody) r += body;
  return r;
}

std::string plain(const std::string& status, const std::string& extraHeaders = "") {
  return response(status, extraHeaders, "text/plain; charset=utf-8", status + "\n", true);
}

// What / answers: where the endpoints are, as exporters' landing pages say it.
const char* const kIndexPage =
    "<!DOCTYPE html>\n<html><head><title>tierd</title></head><body>\n<h1>tierd</h1>\n"
    "<p><a href=\"/metrics\">/metrics</a>: Prometheus metrics (docs/metrics.md)</p>\n"
    "<p><a href=\"/healthz\">/healthz</a>: 200 while the tick loop runs, 503 when it stalls "
    "or fails</p>\n</body></html>\n";

// The request's header lines after the request line, without their line ends.
std::vector<std::string> headerLines(const std::string& request, size_t firstLineEnd) {
  std::vector<std::string> lines;
  size_t at = firstLineEnd + 1;
  while (at < request.size()) {
    size_t end = request.find('\n', at);
    if (end == std::string::npos) end = request.size();
    std::string line = request.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

bool authorized(const std::vector<std::string>& headers, const BasicAuthCredentials& c) {
  for (const std::string& h : headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || lower(trim(h.substr(0, colon))) != "authorization") continue;
    const std::string value = trim(h.substr(colon + 1));
    if (value.size() < 6 || lower(value.substr(0, 6)) != "basic ") return false;
    auto decoded = base64Decode(trim(value.substr(6)));
    if (!decoded) return false;
    const size_t sep = decoded->find(':');
    if (sep == std::string::npos) return false;
    const bool u = constantTimeEquals(decoded->substr(0, sep), c.user);
    const bool p = constantTimeEquals(decoded->substr(sep + 1), c.password);
    return u && p;
  }
  return false;
}

}  // namespace

std::string answerHttpRequest(const std::string& request,
                              const std::optional<BasicAuthCredentials>& credentials,
                              const MetricsHttpServer::Render& render,
                              const MetricsHttpServer::Health& health) {
  const size_t lineEnd = request.find('\n');
  std::string first = request.substr(0, lineEnd == std::string::npos ? request.size() : lineEnd);
  if (!first.empty() && first.back() == '\r') first.pop_back();
  const size_t s1 = first.find(' ');
  const size_t s2 = s1 == std::string::npos ? s1 : first.find(' ', s1 + 1);
  if (s2 == std::string::npos || first.compare(s2 + 1, 5, "HTTP/") != 0)
    return plain("400 Bad Request");
  const std::string method = first.substr(0, s1);
  const std::string target = first.substr(s1 + 1, s2 - s1 - 1);
  if (method != "GET" && method != "HEAD")
    return plain("405 Method Not Allowed", "Allow: GET, HEAD\r\n");
  const std::string path = target.substr(0, target.find('?'));
  const bool withBody = method == "GET";
  if (path == "/healthz") {
    const HealthVerdict v = health ? health() : HealthVerdict{true, "ok: serving"};
    return response(v.ok ? "200 OK" : "503 Service Unavailable", "", "text/plain; charset=utf-8",
                    v.detail + "\n", withBody);
  }
  if (path == "/") return response("200 OK", "", "text/html; charset=utf-8", kIndexPage, withBody);
  if (path != "/metrics") return plain("404 Not Found");
  if (credentials && !authorized(headerLines(request, lineEnd), *credentials))
    return plain("401 Unauthorized", "WWW-Authenticate: Basic realm=\"tierd\"\r\n");
  return response("200 OK", "", "text/plain; version=0.0.4; charset=utf-8", render(), withBody);
}

Result<int> boundPort(int fd, const std::string& address) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return Error::fromErrno("cannot read the bound port", "metrics listen address " + address);
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

Result<int> bindMetricsListener(const std::string& host, int port, const std::string& address) {
  const bool v6 = host.find(':') != std::string::npos;
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return Error::fromErrno("cannot create a socket", "metrics listen address " + address);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, host.c_str(), &sa.sin6_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  if (rc == 0) rc = ::listen(fd, 64);
  const int err = errno;
  if (rc == 0) return fd;
  ::close(fd);
  std::string hint = err == EADDRINUSE
                         ? "another process (or another tierd) already listens there; "
                           "stop it or set another metrics listen address"
                     : err == EADDRNOTAVAIL ? "no interface of this host has that address"
                                            : "cannot listen there";
  Error e = Error::sys(err, hint, "metrics listen address " + address);
  e.kind = ErrorKind::Environment;
  return e;
}

namespace {

struct Connection {
  int fd = -1;
  Clock::time_point accepted;
  Clock::time_point deadline;
  bool answering = false;  ///< the request is complete; `out` is being written
  std::string in;
  std::string out;
  size_t sent = 0;
};

}  // namespace

struct MetricsHttpServer::State {
  int listenFd = -1;
  int wakeFd = -1;
  int port = 0;
  std::optional<BasicAuthCredentials> credentials;
  Render render;
  Health health;
  HttpServerLimits limits;
  std::list<Connection> connections;  ///< in accept order
  Clock::time_point acceptPausedUntil{};
  std::thread thread;

  ~State() {
    for (auto& c : connections)
      ::close(c.fd);
    if (listenFd >= 0) ::close(listenFd);
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void close(std::list<Connection>::iterator it) {
    ::close(it->fd);
    connections.erase(it);
  }

  std::string answer(const std::string& request) const {
    try {
      return answerHttpRequest(request, credentials, render, health);
    } catch (const std::exception&) {  // std::bad_alloc while rendering: this scrape fails
      return plain("500 Internal Server Error");
    }
  }

  // Writes what the socket takes; true when the connection is finished (written or failed).
  bool write(Connection& c) {
    while (c.sent < c.out.size()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
      c.sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads what arrived; true when the connection is finished.
  bool read(Connection& c) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
      if (n == 0) return true;  // the client left before its request was complete
      c.in.append(buf, static_cast<size_t>(n));
      size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) end = c.in.find("\n\n");
      if (end == std::string::npos && c.in.size() <= limits.maxRequestBytes) continue;
      c.out = end == std::string::npos || end > limits.maxRequestBytes
                  ? plain("431 Request Header Fields Too Large")
                  : answer(c.in.substr(0, end));
      c.answering = true;
      c.in.clear();
      c.deadline = Clock::now() + limits.responseTimeout;
      return write(c);
    }
  }

  // Makes room for one more connection: the oldest one still sending its header goes first.
  void evictOne() {
    auto victim = std::find_if(connections.begin(), connections.end(),
                               [](const Connection& c) { return !c.answering; });
    close(victim != connections.end() ? victim : connections.begin());
  }

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        // EMFILE, ENFILE, ENOBUFS: retry a little later instead of spinning on poll().
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          acceptPausedUntil = Clock::now() + std::chrono::milliseconds(100);
        return;
      }
      while (connections.size() >= std::max<size_t>(limits.maxConnections, 1))
        evictOne();
      Connection c;
      c.fd = fd;
      c.accepted = Clock::now();
      c.deadline = c.accepted + limits.requestTimeout;
      connections.push_back(std::move(c));
      // A scraper sends its request with the connection: answer it now, before connections
      // accepted after it can push it out of the table.
      if (read(connections.back())) close(std::prev(connections.end()));
    }
  }

  int pollTimeoutMs(Clock::time_point now) const {
    Clock::time_point next = Clock::time_point::max();
    for (const auto& c : connections)
      next = std::min(next, c.deadline);
    if (acceptPausedUntil > now) next = std::min(next, acceptPausedUntil);
    if (next == Clock::time_point::max()) return -1;
    if (next <= now) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::min<decltype(ms)>(ms, 60000));
  }

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      const Clock::time_point now = Clock::now();
      fds.clear();
      fds.push_back({wakeFd, POLLIN, 0});
      fds.push_back({acceptPausedUntil > now ? -1 : listenFd, POLLIN, 0});
      for (const auto& c : connections)
        fds.push_back({c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
      if (::poll(fds.data(), fds.size(), pollTimeoutMs(now)) < 0 && errno != EINTR) return;
      if (fds[0].revents) return;
      // Connections first (their pollfds follow the list's order), then new ones.
      size_t i = 2;
      for (auto it = connections.begin(); it != connections.end(); ++i) {
        auto cur = it++;
        if (!fds[i].revents) continue;
        const bool done = cur->answering ? write(*cur) : read(*cur);
        if (done) close(cur);
      }
      if (fds[1].revents) acceptAll();
      const Clock::time_point after = Clock::now();
      for (auto it = connections.begin(); it != connections.end();) {
        auto cur = it++;
        if (cur->deadline <= after) close(cur);
      }
    }
  }
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

MetricsHttpServer::~MetricsHttpServer() {
  if (state_->thread.joinable()) {
    const uint64_t one = 1;
    while (::write(state_->wakeFd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    state_->thread.join();
  }
}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::start(
    const std::string& host, int port, const std::string& address,
    std::optional<BasicAuthCredentials> credentials, Render render, HttpServerLimits limits,
    Health health) {
  auto fd = bindMetricsListener(host, port, address);
  if (!fd) return fd.error();
  return serve(fd.value(), address, std::move(credentials), std::move(render), limits,
               std::move(health));
}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::serve(
    int listenFd, const std::string& address, std::optional<BasicAuthCredentials> credentials,
    Render render, HttpServerLimits limits, Health health) {
  auto state = std::make_unique<State>();
  state->listenFd = listenFd;
  auto port = boundPort(state->listenFd, address);
  if (!port) return port.error();
  state->port = port.value();
  state->wakeFd = ::eventfd(0, EFD_CLOEXEC);
  if (state->wakeFd < 0)
    return Error::fromErrno("cannot create the exporter's wake-up eventfd",
                            "metrics listen address " + address);
  state->credentials = std::move(credentials);
  state->render = std::move(render);
  state->health = std::move(health);
  state->limits = limits;
  try {
    State* s = state.get();
    state->thread = std::thread([s] { s->run(); });
  } catch (const std::system_error& e) {
    return Error::env(std::string("cannot start the exporter thread: ") + e.what(),
                      "metrics listen address " + address);
  }
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(state)));
}

int MetricsHttpServer::port() const {
  return state_->port;
}

}  // namespace tierd::telemetry

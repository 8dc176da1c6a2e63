// The exporter's HTTP server against slow and hostile clients: stalled connections never delay a
// scrape, the connection cap makes room by closing the oldest stalled one, a header that never
// ends is dropped at the request timeout, and requests are answered strictly.

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "telemetry/metrics/PrometheusSink.h"

using namespace tierd::telemetry;

namespace {

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  return fd;
}

void sendAll(int fd, const std::string& s) {
  REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()));
}

// A client that sends half a request header and then nothing.
int stalledClient(int port) {
  int fd = connectTo(port);
  sendAll(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: sl");
  return fd;
}

// One scrape; gives up after 20 s without data (a server blocked by stalled clients).
std::string scrape(int port, const std::string& request = "GET /metrics HTTP/1.0\r\n\r\n") {
  int fd = connectTo(port);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sendAll(fd, request);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// True when the server closed `fd` (end of file) within `ms`.
bool closedWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

// True when `fd` is still open: no data and no end of file right now.
bool stillOpen(int fd) {
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

std::unique_ptr<PrometheusSink> startSink(HttpServerLimits limits) {
  ExporterOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.limits = limits;
  auto sink = PrometheusSink::start(o);
  REQUIRE_MESSAGE(sink.ok(), sink.error().describe());
  return std::move(sink.value());
}

}  // namespace

TEST_CASE("clients stalled in their request header do not delay a scrape") {
  HttpServerLimits limits;
  limits.requestTimeout = std::chrono::seconds(120);  // they stay stalled for the whole test
  auto sink = startSink(limits);
  std::vector<int> stalled;
  stalled.reserve(16);
  for (int i = 0; i < 16; ++i)
    stalled.push_back(stalledClient(sink->port()));
  const std::string body = scrape(sink->port());
  CHECK(body.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(body.find("tierd_build_info{") != std::string::npos);
  // Served while every stalled client was still connected, not once they had been dropped.
  for (int fd : stalled) {
    CHECK(stillOpen(fd));
    ::close(fd);
  }
}

TEST_CASE("over the connection cap the oldest stalled client makes room for a scrape") {
  HttpServerLimits limits;
  limits.maxConnections = 4;
  limits.requestTimeout = std::chrono::seconds(120);
  auto sink = startSink(limits);
  std::vector<int> stalled;
  stalled.reserve(10);
  for (int i = 0; i < 10; ++i)
    stalled.push_back(stalledClient(sink->port()));
  const std::string body = scrape(sink->port());
  CHECK(body.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(body.find("tierd_build_info{") != std::string::npos);
  CHECK(closedWithin(stalled.front(), 10000));
  CHECK(stillOpen(stalled.back()));
  for (int fd : stalled)
    ::close(fd);
}

TEST_CASE("a request header that never ends is dropped at the request timeout") {
  HttpServerLimits limits;
  limits.requestTimeout = std::chrono::milliseconds(200);
  auto sink = startSink(limits);
  int fd = stalledClient(sink->port());
  CHECK(closedWithin(fd, 20000));
  ::close(fd);
  // A header larger than the limit is answered 431 at once.
  const std::string huge = "GET /metrics HTTP/1.0\r\nX-Pad: " + std::string(10000, 'a');
  CHECK(scrape(sink->port(), huge).find("HTTP/1.1 431 ") == 0);
  CHECK(scrape(sink->port()).find("HTTP/1.1 200 OK\r\n") == 0);
}

TEST_CASE("requests are answered strictly") {
  const MetricsHttpServer::Render render = [] { return std::string("m 1\n"); };
  const std::optional<BasicAuthCredentials> none;
  const std::string ok = answerHttpRequest("GET /metrics HTTP/1.1\r\nHost: x\r\n", none, render);
  CHECK(ok.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(ok.find("Content-Length: 4\r\n") != std::string::npos);
  CHECK(ok.find("Connection: close\r\n") != std::string::npos);
  CHECK(ok.substr(ok.size() - 4) == "m 1\n");
  const std::string head = answerHttpRequest("HEAD /metrics HTTP/1.1", none, render);
  CHECK(head.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(head.substr(head.size() - 4) == "\r\n\r\n");
  CHECK(answerHttpRequest("GET /metrics?x=1 HTTP/1.1", none, render).find("200 OK") !=
        std::string::npos);
  CHECK(answerHttpRequest("POST /metrics HTTP/1.1", none, render).find("HTTP/1.1 405 ") == 0);
  CHECK(answerHttpRequest("GET /index.html HTTP/1.1", none, render).find("HTTP/1.1 404 ") == 0);
  CHECK(answerHttpRequest("GET /metricsx HTTP/1.1", none, render).find("HTTP/1.1 404 ") == 0);
  CHECK(answerHttpRequest("garbage", none, render).find("HTTP/1.1 400 ") == 0);
  CHECK(answerHttpRequest("GET /metrics FTP/1.0", none, render).find("HTTP/1.1 400 ") == 0);

  const std::optional<BasicAuthCredentials> creds = BasicAuthCredentials{"tierd", "s3cret"};
  const std::string denied = answerHttpRequest("GET /metrics HTTP/1.1", creds, render);
  CHECK(denied.find("HTTP/1.1 401 ") == 0);
  CHECK(denied.find("WWW-Authenticate: Basic realm=\"tierd\"\r\n") != std::string::npos);
  CHECK(denied.find("m 1") == std::string::npos);
  // tierd:s3cret, tierd:wrong, tierd:s3cretX
  CHECK(answerHttpRequest("GET /metrics HTTP/1.1\r\nauthorization:  basic dGllcmQ6czNjcmV0\r\n",
                          creds, render)
            .find("HTTP/1.1 200 OK") == 0);
  CHECK(answerHttpRequest("GET /metrics HTTP/1.1\r\nAuthorization: Basic dGllcmQ6d3Jvbmc=\r\n",
                          creds, render)
            .find("HTTP/1.1 401 ") == 0);
  CHECK(answerHttpRequest(
            "GET /metrics HTTP/1.1\r\nAuthorization: Basic dGllcmQ6czNjcmV0WA==", creds, render)
            .find("HTTP/1.1 401 ") == 0);
  CHECK(answerHttpRequest("GET /metrics HTTP/1.1\r\nAuthorization: Basic !!!!", creds, render)
            .find("HTTP/1.1 401 ") == 0);
  CHECK(answerHttpRequest("GET /metrics HTTP/1.1\r\nAuthorization: Bearer dGllcmQ6czNjcmV0", creds,
                          render)
            .find("HTTP/1.1 401 ") == 0);
}

TEST_CASE("/healthz answers the loop's verdict without credentials, / links the endpoints") {
  const MetricsHttpServer::Render render = [] { return std::string("m 1\n"); };
  const std::optional<BasicAuthCredentials> creds = BasicAuthCredentials{"tierd", "s3cret"};
  HealthVerdict verdict{false, "stalled: the last tick finished 95.0 s ago (limit 30.0 s)"};
  const MetricsHttpServer::Health health = [&] { return verdict; };
  const std::string down = answerHttpRequest("GET /healthz HTTP/1.1", creds, render, health);
  CHECK(down.find("HTTP/1.1 503 Service Unavailable\r\n") == 0);
  CHECK(down.substr(down.size() - verdict.detail.size() - 1) == verdict.detail + "\n");
  CHECK(down.find("m 1") == std::string::npos);
  verdict = {true, "ok: the last tick finished 0.4 s ago"};
  const std::string up = answerHttpRequest("GET /healthz?verbose HTTP/1.1", creds, render, health);
  CHECK(up.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(up.find("ok: the last tick") != std::string::npos);
  const std::string head = answerHttpRequest("HEAD /healthz HTTP/1.1", creds, render, health);
  CHECK(head.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(head.substr(head.size() - 4) == "\r\n\r\n");
  // Without a health callback the server answers for itself.
  CHECK(answerHttpRequest("GET /healthz HTTP/1.1", creds, render).find("HTTP/1.1 200 OK") == 0);
  const std::string index = answerHttpRequest("GET / HTTP/1.1", creds, render, health);
  CHECK(index.find("HTTP/1.1 200 OK\r\nContent-Type: text/html") == 0);
  CHECK(index.find("href=\"/metrics\"") != std::string::npos);
  CHECK(index.find("href=\"/healthz\"") != std::string::npos);
  CHECK(answerHttpRequest("POST /healthz HTTP/1.1", creds, render, health).find("HTTP/1.1 405 ") ==
        0);
  // /metrics still needs the credentials.
  CHECK(answerHttpRequest("GET /metrics HTTP/1.1", creds, render, health).find("HTTP/1.1 401 ") ==
        0);
}

TEST_CASE("a served scrape carries the process metrics, and /healthz the callback's verdict") {
  ExporterOptions o;
  o.listenAddress = "127.0.0.1:0";
  auto sink = PrometheusSink::start(o, [] { return HealthVerdict{false, "starting: no tick"}; });
  REQUIRE(sink);
  const std::string body = scrape(sink.value()->port());
  CHECK(body.find("HTTP/1.1 200 OK") == 0);
  CHECK(body.find("tierd_build_info{") != std::string::npos);
  for (const char* name : {"process_cpu_seconds_total ", "process_start_time_seconds ",
                           "process_resident_memory_bytes ", "process_virtual_memory_bytes ",
                           "process_open_fds ", "process_max_fds "})
    CHECK_MESSAGE(body.find(std::string("\n") + name) != std::string::npos, name);
  CHECK(sink.value()->render().find("process_cpu_seconds_total") == std::string::npos);
  const std::string health = scrape(sink.value()->port(), "GET /healthz HTTP/1.0\r\n\r\n");
  CHECK(health.find("HTTP/1.1 503 ") == 0);
  CHECK(health.find("starting: no tick\n") != std::string::npos);
}

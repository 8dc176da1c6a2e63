#pragma once
/// \file
/// MetricsHttpServer: the exporter's HTTP/1.1 server. One thread and one poll() loop serve every
/// connection without blocking, so a client that stalls (half a request header, a response it
/// never reads) holds a slot of a bounded table for a bounded time and never delays another
/// client: each connection has a deadline for its request header and one for its response, the
/// table has a cap, and a new connection over the cap closes the oldest one still sending its
/// header. It answers GET and HEAD of /metrics with the text a callback renders, optionally
/// behind HTTP basic auth, /healthz with the loop's health (200 or 503, no auth: a liveness
/// probe carries no credentials, and the answer says only whether the loop ticks) and / with a
/// page linking both; one request per connection (Connection: close).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "telemetry/metrics/LoopHealth.h"
#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// Basic auth credentials as read from ExporterOptions::basicAuthFile.
struct BasicAuthCredentials {
  std::string user;
  std::string password;
};

/// The bounds that keep slow or hostile clients from starving the scrapes.
struct HttpServerLimits {
  /// Connections open at once (>= 1). A connection accepted over the cap closes the oldest one
  /// still sending its request header (or, when all are being answered, the oldest one).
  size_t maxConnections = 32;
  /// From accept to the end of the request header; a connection past it is closed unanswered.
  std::chrono::milliseconds requestTimeout{5000};
  /// From the end of the request header until the whole response is written.
  std::chrono::milliseconds responseTimeout{10000};
  /// The largest request header in bytes; a longer one is answered 431 and closed.
  size_t maxRequestBytes = 8192;
};

class MetricsHttpServer {
 public:
  /// Renders the body of a scrape (the text format); called on the server thread.
  using Render = std::function<std::string()>;
  /// Answers /healthz (LoopHealth::check); called on the server thread, must not block. Empty:
  /// /healthz answers 200 while the server runs.
  using Health = std::function<HealthVerdict()>;

  /// Binds `host` (numeric IPv4 or IPv6, no brackets) and `port` (0: a free one) and starts the
  /// server thread. `address` names the listen address in errors; `health` answers /healthz.
  /// Errors: Environment with the errno when the address is in use (EADDRINUSE), not on this host
  /// (EADDRNOTAVAIL) or not allowed (EACCES), or when the thread or its wake-up descriptor cannot
  /// be created.
  static Result<std::unique_ptr<MetricsHttpServer>> start(
      const std::string& host, int port, const std::string& address,
      std::optional<BasicAuthCredentials> credentials, Render render, HttpServerLimits limits = {},
      Health health = {});

  /// Serves on `listenFd`, a listening TCP socket bindMetricsListener made (possibly in another
  /// process), which the server owns from now on. Errors as start() after the bind.
  static Result<std::unique_ptr<MetricsHttpServer>> serve(
      int listenFd, const std::string& address, std::optional<BasicAuthCredentials> credentials,
      Render render, HttpServerLimits limits = {}, Health health = {});

  /// Stops the thread and closes the listening socket and every connection.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  /// The TCP port listened on (the one picked when started with port 0).
  int port() const;

 private:
  struct State;
  explicit MetricsHttpServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Binds `host` (numeric IPv4 or IPv6, no brackets) and `port` (0: a free one) and listens: a
/// non-blocking close-on-exec TCP socket. Errors: Environment with the errno and a hint
/// (EADDRINUSE, EADDRNOTAVAIL, EACCES), naming `address`.
Result<int> bindMetricsListener(const std::string& host, int port, const std::string& address);

/// The TCP port the socket `fd` is bound to (getsockname(2); the kernel's pick for port 0).
/// Errors: Environment with the errno, naming `address`.
Result<int> boundPort(int fd, const std::string& address);

/// The response to one complete request header `request` (the text up to and including the
/// blank line): 200 with `render()` for GET (headers only for HEAD) of /metrics with valid
/// credentials when `credentials` is set; for /healthz 200 or 503 with `health()`'s detail line;
/// for / a text/html page linking both; else 400, 401, 404 or 405. Exposed for tests.
std::string answerHttpRequest(const std::string& request,
                              const std::optional<BasicAuthCredentials>& credentials,
                              const MetricsHttpServer::Render& render,
                              const MetricsHttpServer::Health& health = {});

}  // namespace tierd::telemetry

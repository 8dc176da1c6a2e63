#pragma once
/// \file
/// PrometheusSink: the production MetricsSink. Every catalog metric is a prometheus-cpp family
/// in one registry, served in the text format on http://<listen address>/metrics by a
/// MetricsHttpServer (one poll() loop with request and response timeouts and a connection cap,
/// so stalled clients cannot starve the scrapes). Optional HTTP basic auth with credentials from a
/// file only its owner can read. Every catalog family is exposed from the first scrape on: a family
/// with no series yet (a histogram before its first observation, workload metrics without
/// workloads) is served as its # HELP and # TYPE lines. No TLS (Debian 12's civetweb, built against
/// OpenSSL 1.1's symbols, crashed on TLS, and tierd's own server has none); put a TLS proxy in
/// front when the exporter leaves the host.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/metrics/MetricsHttpServer.h"
#include "telemetry/metrics/MetricsSink.h"
#include "tierd/core/Result.h"

namespace prometheus {
class Collectable;
class Registry;
}  // namespace prometheus

namespace tierd::telemetry {

/// Where and how the exporter listens.
struct ExporterOptions {
  /// "IPv4:port" or "[IPv6]:port"; port 0 picks a free port (tests). Default: loopback only.
  std::string listenAddress = "127.0.0.1:9464";
  /// File holding one line "user:password"; must be a regular file (no symlink) with no
  /// group/other permission bits, owned by root or the user running tierd. Empty: no auth.
  std::string basicAuthFile;
  /// Connection cap and request/response timeouts of the HTTP server.
  HttpServerLimits limits;
  /// The user tierd's exporter process runs as (daemon.metrics_user; ExporterProcess.h). Not
  /// used by start(), which serves from the calling process.
  std::string user = "nobody";
};

/// Reads and checks a credentials file (see ExporterOptions::basicAuthFile). Errors: Environment
/// when the file is missing or readable by group/other, Input when it is not "user:password".
Result<BasicAuthCredentials> readBasicAuthFile(const std::string& path);

/// Parses "host:port" / "[v6]:port" into a numeric host and port. Errors: Input naming the value.
Result<std::pair<std::string, int>> parseListenAddress(const std::string& address);

class PrometheusSink : public MetricsSink {
 public:
  /// A sink with a registry but no HTTP server (render() only).
  PrometheusSink();
  ~PrometheusSink() override;
  PrometheusSink(const PrometheusSink&) = delete;
  PrometheusSink& operator=(const PrometheusSink&) = delete;

  /// Creates the sink and starts serving /metrics. Errors (Environment) when the address is in
  /// use or not available on this host, naming the address and errno; Input for a malformed
  /// address; the errors of readBasicAuthFile. Sets tierd_build_info to 1. A scrape of
  /// /metrics returns render() followed by processMetricsText() (the process_* metrics);
  /// `health` answers /healthz (empty: 200 while serving).
  static Result<std::unique_ptr<PrometheusSink>> start(const ExporterOptions& options,
                                                       MetricsHttpServer::Health health = {});

  /// The TCP port actually listened on (useful with port 0), or 0 when not serving.
  int port() const;

  /// The current exposition text of the catalog's metrics (a scrape adds the process_* ones).
  std::string render() const;

 protected:
  void doAdd(const MetricDef& def, const LabelValues& labels, double delta) override;
  void doSet(const MetricDef& def, const LabelValues& labels, double value) override;
  void doObserve(const MetricDef& def, const LabelValues& labels, double value) override;
  void doDeclare(const MetricDef& def, const LabelValues& labels) override;
  void removeWorkloadSeries(const std::set<std::string>& keep) override;

 private:
  struct Families;
  void* series(const MetricDef& def, const LabelValues& labels);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> exposed_;  ///< registry_ plus the empty families
  std::unique_ptr<Families> families_;
  std::map<std::pair<size_t, LabelValues>, void*> series_;
  std::unique_ptr<MetricsHttpServer> server_;  // destroyed first (joins the server thread)
};

}  // namespace tierd::telemetry

#pragma once
/// \file
/// ExporterProcess: the metrics exporter as a privilege-separated process, the way OpenSSH and
/// chrony keep their network-facing code away from their privileges. The privileged daemon binds
/// the listen address (so a taken port is still its start error), then forks and execs its own
/// executable with `--metrics-exporter`: between fork and exec the child keeps only the listening
/// socket (3) and a socketpair to the daemon (4), with /dev/null as 0, 1 and 2, starts a session
/// of its own (no controlling terminal), switches to an unprivileged user (setgroups(2),
/// setresgid(2), setresuid(2): leaving uid 0 clears every capability) or, when the daemon cannot
/// switch users, drops every capability (capset(2)), and sets no_new_privs. The exec'd exporter
/// (runMetricsExporter) parses HTTP and nothing else; for each scrape it asks the daemon over the
/// socketpair for the rendered text, for /healthz for the loop's verdict, and it exits when the
/// daemon's end closes. The daemon answers on one thread of its own, only those two fixed
/// one-byte requests, and checks /proc/PID/status of the child before it trusts it: no
/// capability in any set, no_new_privs, the expected uid. It keeps its own copy of the listening
/// socket, so no other process can take the port while it runs. What a compromised exporter can
/// do is what its uid can do, plus read the metrics and the health line and make the daemon
/// render them at most every kMinRenderGapMs.

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "telemetry/metrics/MetricsHttpServer.h"
#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// A render younger than this many milliseconds is reused: a compromised or busy exporter cannot
/// make the daemon render more often than this.
inline constexpr int kMinRenderGapMs = 100;

/// What ExporterProcess::spawn needs.
struct ExporterProcessOptions {
  /// The listen address as configured ("IPv4:port", "[IPv6]:port"; daemon.metrics_listen).
  std::string listenAddress;
  /// HTTP basic auth the exporter requires on /metrics (read by the daemon: the file is 0600).
  std::optional<BasicAuthCredentials> credentials;
  /// Connection cap and request/response timeouts of the exporter's HTTP server.
  HttpServerLimits limits;
  /// The user the exporter runs as (daemon.metrics_user), looked up with getpwnam(3) before the
  /// fork. Used when the daemon runs as uid 0; otherwise the exporter keeps the daemon's uid and
  /// drops every capability.
  std::string user = "nobody";
  /// The program exec'd with `--metrics-exporter` (tierd itself).
  std::string executable = "/proc/self/exe";
};

/// The uid and gid of `user` (getpwnam_r(3)). Errors: Input when there is no such user or it is
/// uid 0; Environment when the user database cannot be read.
Result<std::pair<uid_t, gid_t>> exporterUser(const std::string& user);

/// The daemon's side: the child, its socketpair and the thread that answers it.
class ExporterProcess {
 public:
  /// Renders the body of a scrape; called on the answering thread.
  using Render = std::function<std::string()>;

  /// Binds the address, starts the exporter and waits (at most 5 s) until it serves; scrapes
  /// wait for answer() to start the answering thread (the daemon drops its user-switching
  /// capabilities between the two, so that thread never holds them). Errors:
  /// Input for a malformed address or an unknown user; Environment with the errno when the
  /// address is in use or not on this host, when the child cannot switch users or exec, or when
  /// /proc/PID/status shows it kept a capability.
  static Result<std::unique_ptr<ExporterProcess>> spawn(const ExporterProcessOptions& options,
                                                        Render render,
                                                        MetricsHttpServer::Health health);

  /// Starts the thread that answers the exporter's requests. Errors: Environment when the thread
  /// cannot be created.
  Status answer();

  /// Stops the answering thread and closes the channel, which stops the exporter, and reaps it
  /// (waits at most 2 s: the daemon cannot signal a process of another uid without CAP_KILL).
  ~ExporterProcess();
  ExporterProcess(const ExporterProcess&) = delete;
  ExporterProcess& operator=(const ExporterProcess&) = delete;

  /// The child's pid.
  pid_t pid() const;
  /// The address listened on, "host:port" or "[v6]:port", with the port the kernel bound (the
  /// configured address with a port of 0 replaced).
  const std::string& address() const;
  /// The uid the exporter runs as (from /proc/PID/status).
  uid_t uid() const;
  /// False once the child closed its end or broke the protocol (it exited or was killed). The
  /// daemon says so and goes on tiering without metrics.
  bool running() const;
  /// How the child ended, once running() is false ("exit status 1", "killed by signal 9"; ""
  /// while it runs or when it has not been reaped yet).
  std::string exitDescription();

 private:
  struct State;
  explicit ExporterProcess(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// The exporter's side (`tierd --metrics-exporter`): serves HTTP on descriptor 3 with what the
/// daemon answers on descriptor 4, until SIGTERM or SIGINT, or until the daemon closes its end.
/// Returns the process exit code (0 on a stop, 1 when the setup from the daemon is unreadable).
int runMetricsExporter();

}  // namespace tierd::telemetry

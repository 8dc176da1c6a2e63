#pragma once
/// \file
/// The control socket: how `tierctl status | pause | resume | restore` reach the running tierd
/// (docs/service.md, "Control socket"). A Unix stream socket (AF_UNIX, SOCK_STREAM) at
/// daemon.control_socket, mode 0600 in tierd's runtime directory (/run/tierd, 0700, root's);
/// a peer whose SO_PEERCRED uid is neither 0 nor tierd's own is refused. One request per
/// connection: one line of text (at most kControlMaxRequestBytes, "\n"-terminated), answered
/// with one JSON document and "\n", then the connection is closed. Requests:
///   status                 {"ok":true, "status":{...}}: what the last tick saw and did
///   pause [WORKLOAD]       no page moves (all workloads, or one); sampling and metrics go on
///   resume [WORKLOAD]      undo pause, and a restore's hold (all, or that workload's)
///   restore WORKLOAD       hold the workload and move its pages back to where its memory
///                          policy puts them (Engine::OperatorHold)
/// Errors: {"ok":false, "error":"..."}. The server serves one connection at a time on its own
/// thread; the handler runs on that thread and must not block on the tick loop.

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "tierd/core/Result.h"

namespace tierd::daemon {

/// Longest request line, bytes (the verb and a workload name; names are at most 64 bytes).
inline constexpr size_t kControlMaxRequestBytes = 4096;

/// One parsed request line.
struct ControlRequest {
  /// The request's first word.
  enum class Verb {
    Status,   ///< "status"
    Pause,    ///< "pause [WORKLOAD]"
    Resume,   ///< "resume [WORKLOAD]"
    Restore,  ///< "restore WORKLOAD"
  };
  Verb verb = Verb::Status;  ///< what is asked
  std::string workload;      ///< "" = every workload (pause, resume); required for restore
  bool operator==(const ControlRequest&) const = default;
};

/// Parses one request line (trailing "\r\n" or "\n" ignored; words separated by blanks).
/// Errors: Input naming the unknown verb, a missing or extra argument.
Result<ControlRequest> parseControlRequest(std::string_view line);

/// The request line of `request` (what tierctl sends): "restore redis".
std::string formatControlRequest(const ControlRequest& request);

/// Serves the control socket on a thread of its own until destroyed.
class ControlServer {
 public:
  /// Answers one request with one JSON document (no newline). Runs on the server's thread.
  using Handler = std::function<std::string(const ControlRequest&)>;

  /// Binds and listens on `path` (mode 0600 before listen(2)) and starts the thread. The
  /// directory must exist, be owned by root or tierd's user and not be writable by group or
  /// others. A socket file left at `path` by a tierd that is gone (connect(2) refused) is
  /// replaced; anything else there is an error. Errors: Environment with errno (bind, listen,
  /// "another process serves this control socket", "exists and is not a socket", the
  /// directory's owner or mode), Input (path longer than sun_path's 107 bytes).
  static Result<std::unique_ptr<ControlServer>> start(const std::string& path, Handler handler);

  /// Stops the thread and removes the socket file.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  /// Requests refused because the peer's uid was not allowed (SO_PEERCRED), since start.
  uint64_t refusedPeers() const { return refused_.load(); }

 private:
  ControlServer(std::string path, int listenFd, int wakeFd, Handler handler);
  void serve();
  void answer(int fd);

  std::string path_;
  int listenFd_ = -1;
  int wakeFd_ = -1;  ///< eventfd: written by the destructor to end serve()
  Handler handler_;
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

/// Sends `request` to the tierd serving `path` and returns its JSON answer (without the
/// newline). Waits at most `timeoutMs` in all (connect, send and answer). Errors: Environment with
/// errno (no tierd there: ENOENT or ECONNREFUSED; EACCES for a user other than root), Input (answer
/// too long, over 16 MiB).
Result<std::string> controlCall(const std::string& path, const ControlRequest& request,
                                int timeoutMs = 10'000);

}  // namespace tierd::daemon

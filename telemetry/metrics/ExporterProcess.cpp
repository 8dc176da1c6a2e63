#include "telemetry/metrics/ExporterProcess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "telemetry/metrics/PrometheusSink.h"

namespace tierd::telemetry {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kListenFd = 3;   // the exporter's listening socket
constexpr int kChannelFd = 4;  // the exporter's end of the socketpair
constexpr char kReady = 'R';   // exporter -> daemon: serving
constexpr char kFailed = 'E';  // exporter -> daemon, before exec: a step failed (step, errno)
constexpr char kMetrics = 'M';
constexpr char kHealth = 'H';
constexpr uint32_t kMaxFrame = 64u << 20;  // the largest answer the exporter accepts

// The steps between fork and exec, as the failure message names them.
enum Step : char {
  kDup = 1,
  kSetsid,
  kSetgroups,
  kSetresgid,
  kSetresuid,
  kCapset,
  kNoNewPrivs,
  kExec
};

const char* stepName(int step) {
  switch (step) {
    case kDup:
      return "dup2";
    case kSetsid:
      return "setsid";
    case kSetgroups:
      return "setgroups";
    case kSetresgid:
      return "setresgid";
    case kSetresuid:
      return "setresuid";
    case kCapset:
      return "capset";
    case kNoNewPrivs:
      return "prctl(PR_SET_NO_NEW_PRIVS)";
    case kExec:
      return "execve";
    default:
      return "setup";
  }
}

// Waits until `fd` is readable (or `events`), at most `ms`; false on timeout or poll error.
bool waitFor(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

// Reads exactly `size` bytes within `ms` in all; false on EOF, error or timeout.
bool readFull(int fd, void* data, size_t size, int ms) {
  auto* p = static_cast<char*>(data);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (size > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || !waitFor(fd, POLLIN, static_cast<int>(left))) return false;
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Writes all of `data` within `ms`; false on error, timeout, or `stopFd` (>= 0) readable.
bool writeFull(int fd, const std::string& data, int ms, int stopFd = -1) {
  size_t at = 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (at < data.size()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p[2] = {{fd, POLLOUT, 0}, {stopFd, POLLIN, 0}};
    const int ready = ::poll(p, stopFd >= 0 ? 2 : 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || (stopFd >= 0 && p[1].revents)) return false;
    const ssize_t n = ::send(fd, data.data() + at, data.size() - at, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

// A frame: 4 bytes of length (host order: both ends are this program on this host), one status
// byte, the payload.
std::string frame(char status, const std::string& payload) {
  const auto size = static_cast<uint32_t>(payload.size());
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  out.push_back(status);
  return out + payload;
}

std::optional<std::pair<char, std::string>> readFrame(int fd, int ms) {
  uint32_t size = 0;
  char status = 0;
  if (!readFull(fd, &size, sizeof size, ms) || size > kMaxFrame || !readFull(fd, &status, 1, ms))
    return std::nullopt;
  std::string payload(size, '\0');
  if (size > 0 && !readFull(fd, payload.data(), size, ms)) return std::nullopt;
  return std::make_pair(status, std::move(payload));
}

// The setup the daemon sends first: "key=value" lines.
std::string setupText(const ExporterProcessOptions& o) {
  std::ostringstream s;
  s << "address=" << o.listenAddress << "\nmax_connections=" << o.limits.maxConnections
    << "\nrequest_timeout_ms=" << o.limits.requestTimeout.count()
    << "\nresponse_timeout_ms=" << o.limits.responseTimeout.count()
    << "\nmax_request_bytes=" << o.limits.maxRequestBytes << "\n";
  if (o.credentials)
    s << "auth_user=" << o.credentials->user << "\nauth_password=" << o.credentials->password
      << "\n";
  return s.str();
}

std::map<std::string, std::string> parseSetup(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// What the child needs between fork and exec, prepared before the fork: nothing is allocated
// after it (the daemon may have threads; only async-signal-safe calls follow).
struct ChildPlan {
  bool switchUser = false;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent = 0;
  int listenFd = -1;
  int channelFd = -1;
  int devNull = -1;  // becomes 0, 1 and 2: nothing of the daemon's terminal, journal or logs
  const char* executable = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

[[noreturn]] void childFail(int fd, Step step) {
  const int err = errno;
  char msg[1 + 1 + sizeof err];
  msg[0] = kFailed;
  msg[1] = static_cast<char>(step);
  std::memcpy(msg + 2, &err, sizeof err);
  (void)!::write(fd, msg, sizeof msg);
  ::_exit(127);
}

[[noreturn]] void childExec(const ChildPlan& p) {
  // Copies above every target first (any of the three may sit on 0..4, e.g. when the daemon was
  // started with a standard descriptor closed), then /dev/null to 0-2, the listening socket to 3
  // and the channel to 4 (dup2 leaves them without close-on-exec); everything above 4 is shut.
  const int channel = ::fcntl(p.channelFd, F_DUPFD_CLOEXEC, kChannelFd + 1);
  if (channel < 0) ::_exit(127);
  const int listen = ::fcntl(p.listenFd, F_DUPFD_CLOEXEC, kChannelFd + 1);
  const int devNull = ::fcntl(p.devNull, F_DUPFD_CLOEXEC, kChannelFd + 1);
  if (listen < 0 || devNull < 0) childFail(channel, kDup);
  for (int fd = 0; fd <= 2; ++fd)
    if (::dup2(devNull, fd) != fd) childFail(channel, kDup);
  if (::dup2(listen, kListenFd) != kListenFd) childFail(channel, kDup);
  if (::dup2(channel, kChannelFd) != kChannelFd) childFail(channel, kDup);
  // Failures from here on are reported on the channel at 4 (the copies above it close next).
  // A session of its own: no controlling terminal to inject input into (TIOCSTI).
  if (::setsid() < 0) childFail(kChannelFd, kSetsid);
  if (::syscall(SYS_close_range, kChannelFd + 1, ~0U, 0) != 0)
    for (int fd = kChannelFd + 1; fd < 65536; ++fd)
      ::close(fd);
  if (p.switchUser) {
    // Leaving uid 0 for good clears the permitted, effective and ambient capability sets.
    if (::setgroups(0, nullptr) != 0) childFail(kChannelFd, kSetgroups);
    if (::setresgid(p.gid, p.gid, p.gid) != 0) childFail(kChannelFd, kSetresgid);
    if (::setresuid(p.uid, p.uid, p.uid) != 0) childFail(kChannelFd, kSetresuid);
  } else {
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    if (::syscall(SYS_capset, &header, none) != 0) childFail(kChannelFd, kCapset);
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) childFail(kChannelFd, kNoNewPrivs);
  // A daemon already gone ends the child (later, the channel's end closing does).
  if (::getppid() != p.parent) ::_exit(0);
  ::execve(p.executable, p.argv, p.envp);
  childFail(kChannelFd, kExec);
}

// Reads "Key:\tvalue" lines of /proc/PID/status.
std::map<std::string, std::string> procStatus(pid_t pid) {
  std::map<std::string, std::string> kv;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    kv[line.substr(0, colon)] = value;
  }
  return kv;
}

// Why the child at `pid` must not serve, or "" when it holds no capability, has no_new_privs
// and runs as `uid` in all of real, effective, saved and file-system uid.
std::string privilegeProblem(pid_t pid, uid_t uid) {
  const auto st = procStatus(pid);
  if (st.empty()) return "cannot read /proc/" + std::to_string(pid) + "/status";
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) {
    auto it = st.find(set);
    if (it == st.end() || it->second.find_first_not_of('0') != std::string::npos)
      return std::string(set) + " is " + (it == st.end() ? "missing" : it->second);
  }
  if (auto it = st.find("NoNewPrivs"); it == st.end() || it->second != "1")
    return "no_new_privs is not set";
  const std::string u = std::to_string(uid);
  if (auto it = st.find("Uid"); it == st.end() || it->second != u + "\t" + u + "\t" + u + "\t" + u)
    return "its uids are " + (it == st.end() ? std::string("missing") : it->second);
  return "";
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

struct ExporterProcess::State {
  pid_t pid = -1;
  std::string address;
  uid_t uid = 0;
  int channel = -1;
  int stopFd = -1;
  int listenFd = -1;
  Render render;
  MetricsHttpServer::Health health;
  std::atomic<bool> running{true};
  std::mutex reapMu;
  std::optional<int> waitStatus;
  std::string lastRender;
  Clock::time_point lastRenderAt{};
  std::thread thread;

  ~State() {
    if (thread.joinable()) {
      const uint64_t one = 1;
      while (::write(stopFd, &one, sizeof one) < 0 && errno == EINTR) {
      }
      thread.join();
    }
    if (channel >= 0) ::close(channel);  // the exporter sees its end closed and stops
    if (stopFd >= 0) ::close(stopFd);
    if (listenFd >= 0) ::close(listenFd);
    if (pid > 0) endChild();
  }

  void reap(int options) {
    std::lock_guard<std::mutex> lock(reapMu);
    if (waitStatus || pid <= 0) return;
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid, &status, options);
    } while (r < 0 && errno == EINTR);
    if (r == pid) waitStatus = status;
  }

  // Reaps the exporter once it has seen its end of the channel closed (at most 2 s). The
  // daemon cannot signal it (another uid, no CAP_KILL, so not even the parent-death signal
  // reaches it); one that does not stop (stopped, or compromised) is left to the unit's cgroup:
  // systemd stops every process of the service.
  void endChild() {
    for (int i = 0; i < 200 && !waitStatus; ++i) {
      reap(WNOHANG);
      if (!waitStatus) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!waitStatus)
      std::fprintf(stderr,
                   "tierd: warning: the metrics exporter process (pid %d) did not exit within 2 s "
                   "of its channel closing; it runs on without the daemon\n",
                   static_cast<int>(pid));
  }

  std::string answer(char request) {
    try {
      if (request == kHealth) {
        const HealthVerdict v = health ? health() : HealthVerdict{true, "ok: serving"};
        return frame(v.ok ? 1 : 0, v.detail);
      }
      const Clock::time_point now = Clock::now();
      if (lastRender.empty() || now - lastRenderAt >= std::chrono::milliseconds(kMinRenderGapMs)) {
        lastRender = render();
        lastRenderAt = now;
      }
      return frame(1, lastRender);
    } catch (const std::exception&) {  // std::bad_alloc while rendering: this scrape fails
      return frame(0, "");
    }
  }

  // Answers the exporter's requests until it closes its end, breaks the protocol or the stop.
  void run() {
    char requests[64];
    for (;;) {
      pollfd fds[2] = {{stopFd, POLLIN, 0}, {channel, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[0].revents) return;
      const ssize_t n = ::read(channel, requests, sizeof requests);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      bool ok = true;
      for (ssize_t i = 0; i < n && ok; ++i)
        ok = (requests[i] == kMetrics || requests[i] == kHealth) &&
             writeFull(channel, answer(requests[i]), 2000, stopFd);
      if (!ok) break;  // an unknown request or an exporter that does not read: end it
    }
    running.store(false);
    ::shutdown(channel, SHUT_RDWR);  // the exporter sees its end closed and stops
  }
};

ExporterProcess::ExporterProcess(std::unique_ptr<State> state) : state_(std::move(state)) {}
ExporterProcess::~ExporterProcess() = default;

pid_t ExporterProcess::pid() const {
  return state_->pid;
}
const std::string& ExporterProcess::address() const {
  return state_->address;
}
uid_t ExporterProcess::uid() const {
  return state_->uid;
}
bool ExporterProcess::running() const {
  return state_->running.load();
}

std::string ExporterProcess::exitDescription() {
  if (running()) return "";
  state_->reap(WNOHANG);
  std::lock_guard<std::mutex> lock(state_->reapMu);
  return state_->waitStatus ? describeWaitStatus(*state_->waitStatus) : "";
}

Result<std::pair<uid_t, gid_t>> exporterUser(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return Error::sys(rc, "cannot look up the metrics exporter's user", user);
  if (!found)
    return Error::input("no such user (daemon.metrics_user names the metrics exporter's user)",
                        user);
  if (found->pw_uid == 0)
    return Error::input("uid 0: the metrics exporter must run as an unprivileged user", user);
  return std::make_pair(found->pw_uid, found->pw_gid);
}

namespace {

// The uid and gid the exporter switches to, or nullopt when the daemon is not uid 0 (the
// exporter then keeps its uid and drops its capabilities).
Result<std::optional<std::pair<uid_t, gid_t>>> exporterIdentity(const std::string& user) {
  if (::geteuid() != 0) return std::optional<std::pair<uid_t, gid_t>>();
  auto found = exporterUser(user);
  if (!found) return found.error();
  return std::optional<std::pair<uid_t, gid_t>>(found.value());
}

// Waits for the child's first word: ready, a failed step, or its end.
Status awaitReady(int channel, const std::string& address, const std::string& user) {
  char first = 0;
  if (readFull(channel, &first, 1, 5000) && first == kReady) return Ok{};
  const std::string where = "metrics listen address " + address;
  char step = 0;
  int err = 0;
  if (first == kFailed && readFull(channel, &step, 1, 1000) &&
      readFull(channel, &err, sizeof err, 1000))
    return Error::sys(err,
                      std::string("the metrics exporter process could not ") + stepName(step) +
                          (step == kSetresuid || step == kSetresgid || step == kSetgroups
                               ? " to user " + user +
                                     " (tierd needs CAP_SETUID and CAP_SETGID "
                                     "at start to run it unprivileged)"
                               : ""),
                      where);
  return Error::env("the metrics exporter process did not start serving within 5 s", where);
}

}  // namespace

Result<std::unique_ptr<ExporterProcess>> ExporterProcess::spawn(
    const ExporterProcessOptions& options, Render render, MetricsHttpServer::Health health) {
  auto hp = parseListenAddress(options.listenAddress);
  if (!hp) return hp.error();
  auto identity = exporterIdentity(options.user);
  if (!identity) return identity.error();
  auto listenFd = bindMetricsListener(hp->first, hp->second, options.listenAddress);
  if (!listenFd) return listenFd.error();
  auto port = boundPort(listenFd.value(), options.listenAddress);
  if (!port) {
    ::close(listenFd.value());
    return port.error();
  }
  auto state = std::make_unique<State>();
  state->address = (hp->first.find(':') != std::string::npos ? "[" + hp->first + "]" : hp->first) +
                   ":" + std::to_string(port.value());
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    ::close(listenFd.value());
    return Error::fromErrno("cannot create the metrics exporter's socketpair",
                            options.listenAddress);
  }
  state->stopFd = ::eventfd(0, EFD_CLOEXEC);
  // Named apart from the daemon: `pidof tierd` and `pkill -x tierd` find the daemon only.
  std::string arg0 = "tierd-exporter", arg1 = "--metrics-exporter";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  char* envp[] = {nullptr};
  ChildPlan plan;
  plan.switchUser = identity->has_value();
  if (plan.switchUser) std::tie(plan.uid, plan.gid) = **identity;
  plan.parent = ::getpid();
  plan.listenFd = listenFd.value();
  plan.channelFd = pair[1];
  plan.devNull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  plan.executable = options.executable.c_str();
  plan.argv = argv;
  plan.envp = envp;
  const pid_t pid = state->stopFd < 0 || plan.devNull < 0 ? -1 : ::fork();
  if (pid == 0) childExec(plan);
  const int forkErrno = errno;
  ::close(pair[1]);
  if (plan.devNull >= 0) ::close(plan.devNull);
  // The daemon keeps its copy of the listening socket (it never accepts on it): while tierd
  // runs, no other process can bind the port, even if the exporter is killed.
  state->listenFd = listenFd.value();
  state->channel = pair[0];
  if (pid < 0) {
    errno = forkErrno;
    return Error::fromErrno("cannot start the metrics exporter process", options.listenAddress);
  }
  state->pid = pid;
  state->uid = plan.switchUser ? plan.uid : ::getuid();
  state->render = std::move(render);
  state->health = std::move(health);
  if (!writeFull(state->channel, frame(0, setupText(options)), 5000))
    return Error::env("cannot send the metrics exporter its setup",
                      "metrics listen address " + options.listenAddress);
  if (Status ready = awaitReady(state->channel, options.listenAddress, options.user); !ready)
    return ready.error();
  if (const std::string problem = privilegeProblem(pid, state->uid); !problem.empty())
    return Error::env("the metrics exporter process (pid " + std::to_string(pid) +
                          ") is not unprivileged: " + problem,
                      "metrics listen address " + options.listenAddress);
  return std::unique_ptr<ExporterProcess>(new ExporterProcess(std::move(state)));
}

Status ExporterProcess::answer() {
  if (state_->thread.joinable()) return Ok{};
  try {
    State* s = state_.get();
    state_->thread = std::thread([s] { s->run(); });
  } catch (const std::system_error& e) {
    return Error::env(std::string("cannot start the metrics answering thread: ") + e.what(),
                      "metrics exporter");
  }
  return Ok{};
}

// ---- the exporter's side ----

namespace {

// The exporter's end of the channel: answers come in request order; a request whose answer
// did not come in time is still pending, and its answer is skipped when it comes.
struct Channel {
  std::mutex mu;
  std::string in;   // bytes received and not yet consumed
  int pending = 0;  // requests sent whose answers were not consumed
  bool gone = false;
};

Channel& channel() {
  static Channel c;
  return c;
}

// Pops one complete frame off `in`, if there is one.
std::optional<std::pair<char, std::string>> popFrame(std::string& in) {
  uint32_t size = 0;
  if (in.size() < sizeof size + 1) return std::nullopt;
  std::memcpy(&size, in.data(), sizeof size);
  if (in.size() < sizeof size + 1 + size) return std::nullopt;
  auto f = std::make_pair(in[sizeof size], in.substr(sizeof size + 1, size));
  in.erase(0, sizeof size + 1 + size);
  return f;
}

// One request to the daemon and its answer, on the server thread; nullopt when the daemon does
// not answer within 5 s (this scrape fails; the answer is skipped when it comes) or is gone
// (the exporter then stops). At most 8 requests wait on a stalled daemon.
std::optional<std::pair<char, std::string>> ask(char request) {
  Channel& c = channel();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.gone || c.pending >= 8) return std::nullopt;
  if (::send(kChannelFd, &request, 1, MSG_NOSIGNAL) != 1) {
    c.gone = true;
  } else {
    ++c.pending;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      while (auto f = popFrame(c.in))
        if (--c.pending == 0) return f;
      if (c.in.size() >= sizeof(uint32_t)) {
        uint32_t size = 0;
        std::memcpy(&size, c.in.data(), sizeof size);
        if (size > kMaxFrame) {
          c.gone = true;
          break;
        }
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || !waitFor(kChannelFd, POLLIN, static_cast<int>(left))) return std::nullopt;
      char buf[65536];
      const ssize_t n = ::read(kChannelFd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        c.gone = true;
        break;
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
  }
  ::kill(::getpid(), SIGTERM);  // the daemon is gone or broke the protocol: stop
  return std::nullopt;
}

}  // namespace

int runMetricsExporter() {
  // Not ptrace-able or core-dumped by other processes of the same unprivileged user.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::prctl(PR_SET_NAME, "tierd-exporter", 0, 0, 0);  // comm would be "exe" (/proc/self/exe)
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  // Blocked before the server thread exists, so it inherits the mask and sigwait below gets them.
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  auto setup = readFrame(kChannelFd, 5000);
  if (!setup) return 1;
  auto kv = parseSetup(setup->second);
  auto number = [&](const char* key, uint64_t fallback) {
    auto it = kv.find(key);
    return it == kv.end() ? fallback : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  HttpServerLimits limits;
  limits.maxConnections = number("max_connections", limits.maxConnections);
  limits.requestTimeout = std::chrono::milliseconds(
      number("request_timeout_ms", static_cast<uint64_t>(limits.requestTimeout.count())));
  limits.responseTimeout = std::chrono::milliseconds(
      number("response_timeout_ms", static_cast<uint64_t>(limits.responseTimeout.count())));
  limits.maxRequestBytes = number("max_request_bytes", limits.maxRequestBytes);
  std::optional<BasicAuthCredentials> credentials;
  if (kv.count("auth_user"))
    credentials = BasicAuthCredentials{kv["auth_user"], kv["auth_password"]};
  auto render = []() -> std::string {
    auto a = ask(kMetrics);
    if (!a || a->first != 1) throw std::runtime_error("the daemon did not render the metrics");
    return a->second;
  };
  auto health = []() -> HealthVerdict {
    auto a = ask(kHealth);
    if (!a) return {false, "the daemon does not answer"};
    return {a->first == 1, a->second};
  };
  auto server = MetricsHttpServer::serve(kListenFd, kv["address"], std::move(credentials), render,
                                         limits, health);
  if (!server) return 1;
  const char ready = kReady;
  if (::send(kChannelFd, &ready, 1, MSG_NOSIGNAL) != 1) return 1;
  // Until a stop signal, or the daemon closing its end (it cannot signal this process: it has
  // no CAP_KILL and another uid).
  const int signals = ::signalfd(-1, &stop, SFD_CLOEXEC);
  for (;;) {
    pollfd fds[2] = {{signals, POLLIN, 0}, {kChannelFd, POLLRDHUP, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents || (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) break;
  }
  server.value().reset();
  return 0;
}

}  // namespace tierd::telemetry

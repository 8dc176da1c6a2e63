#include "tierd/scope/Scope.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "tierd/sys/Parsers.h"

namespace tierd::scope {
namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find(sep, pos);
    if (e == std::string_view::npos) e = s.size();
    if (e > pos) out.emplace_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

std::string basename(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

Result<std::vector<CgroupMount>> parseCgroupMounts(std::string_view mountinfo,
                                                   const std::string& context) {
  std::vector<CgroupMount> out;
  size_t lineNo = 0;
  for (const std::string& line : split(mountinfo, '\n')) {
    ++lineNo;
    // proc(5): id parent major:minor root mountpoint options [optional...] - fstype source super
    auto f = split(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 10 || dash == f.end() || f.end() - dash < 4)
      return Error::input("malformed mountinfo line '" + line + "'",
                          context + ":" + std::to_string(lineNo));
    const std::string& fstype = *(dash + 1);
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    CgroupMount m;
    m.mountPoint = f[4];
    m.version = fstype == "cgroup2" ? 2 : 1;
    if (m.version == 1)
      for (const std::string& opt : split(*(dash + 3), ','))
        if (opt != "rw" && opt != "ro") m.controllers.push_back(opt);
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::map<NodeId, uint64_t>> parseNumaStatAnon(std::string_view text, int cgroupVersion,
                                                     uint64_t pageSize,
                                                     const std::string& context) {
  size_t lineNo = 0;
  for (const std::string& line : split(text, '\n')) {
    ++lineNo;
    const std::string where = context + ":" + std::to_string(lineNo);
    auto f = split(line, ' ');
    if (f.empty()) continue;
    const bool v1Anon = cgroupVersion == 1 && f[0].rfind("anon=", 0) == 0;
    const bool v2Anon = cgroupVersion == 2 && f[0] == "anon";
    if (!v1Anon && !v2Anon) continue;
    std::map<NodeId, uint64_t> out;
    for (size_t i = 1; i < f.size(); ++i) {
      const std::string& kv = f[i];
      auto eq = kv.find('=');
      if (kv.size() < 4 || kv[0] != 'N' || eq == std::string::npos)
        return Error::input("expected N<node>=<value>, got '" + kv + "'", where);
      auto node = sys::parseU64(kv.substr(1, eq - 1), where);
      auto value = sys::parseU64(kv.substr(eq + 1), where);
      if (!node) return node.error();
      if (!value) return value.error();
      out[static_cast<NodeId>(node.value())] =
          cgroupVersion == 1 ? value.value() * pageSize : value.value();
    }
    return out;
  }
  return Error::input("no anon line", context);
}

ScopeProvider::ScopeProvider(sys::SysRoot root, pid_t selfPid)
    : root_(std::move(root)), self_(selfPid) {}

Status ScopeProvider::refreshMounts() {
  auto text = root_.read("/proc/self/mountinfo");
  if (!text) return text.error();
  auto mounts = parseCgroupMounts(text.value(), root_.path("/proc/self/mountinfo"));
  if (!mounts) return mounts.error();
  mounts_ = std::move(mounts.value());
  return Ok{};
}

Result<std::string> ScopeProvider::cgroupDir(const std::string& path, int& version) const {
  // Prefer the v2 hierarchy, then v1 hierarchies that account memory, then any v1 hierarchy.
  std::vector<const CgroupMount*> order;
  for (const auto& m : mounts_)
    if (m.version == 2) order.push_back(&m);
  for (const char* want : {"memory", "pids", ""})
    for (const auto& m : mounts_) {
      if (m.version != 1) continue;
      bool match = *want == '\0' || std::find(m.controllers.begin(), m.controllers.end(), want) !=
                                        m.controllers.end();
      if (match && std::find(order.begin(), order.end(), &m) == order.end()) order.push_back(&m);
    }
  std::string tried;
  const std::string rel = path.empty() || path[0] != '/' ? "/" + path : path;
  for (const CgroupMount* m : order) {
    std::string dir = m->mountPoint + (rel == "/" ? "" : rel);
    if (root_.exists(dir + "/cgroup.procs")) {
      version = m->version;
      return dir;
    }
    tried += (tried.empty() ? "" : ", ") + root_.path(dir);
  }
  return Error::sys(ENOENT,
                    "cgroup '" + path + "' not found (tried " +
                        (tried.empty() ? std::string("no cgroup mounts") : tried) + ")",
                    "workload");
}

bool ScopeProvider::pidAlive(pid_t pid) const {
  return root_.exists("/proc/" + std::to_string(pid) + "/comm");
}

std::vector<pid_t> ScopeProvider::pidsByCommand(const std::string& command) const {
  std::vector<pid_t> out;
  auto entries = root_.list("/proc");
  if (!entries) return out;
  for (const std::string& e : entries.value()) {
    auto pid = sys::parseU64(e, "/proc");
    if (!pid) continue;
    const std::string dir = "/proc/" + e;
    auto comm = root_.readAttr(dir + "/comm");
    if (!comm) continue;  // raced with exit
    bool match =
        comm.value() == command || (command.size() > 15 && comm.value() == command.substr(0, 15));
    if (auto cmdline = root_.read(dir + "/cmdline"); cmdline && !cmdline->empty()) {
      std::string argv0 = cmdline->substr(0, cmdline->find('\0'));
      match = match || basename(argv0) == command;
    } else {
      match = false;  // kernel threads have an empty cmdline: never ours to move
    }
    if (match) out.push_back(static_cast<pid_t>(pid.value()));
  }
  return out;
}

Result<WorkloadScope> ScopeProvider::resolve(const WorkloadSelector& sel) const {
  WorkloadScope scope;
  scope.name = sel.name;
  std::vector<pid_t> pids;
  if (sel.cgroup) {
    int version = 2;
    auto dir = cgroupDir(*sel.cgroup, version);
    if (!dir) return dir.error().within("workload '" + sel.name + "'");
    scope.cgroupDir = root_.path(dir.value());
    struct stat st;
    if (::stat(scope.cgroupDir.c_str(), &st) == 0) scope.cgroupInode = st.st_ino;
    auto procs = root_.read(dir.value() + "/cgroup.procs");
    if (!procs) return procs.error().within("workload '" + sel.name + "'");
    for (const std::string& line : split(procs.value(), '\n')) {
      auto pid = sys::parseU64(line, root_.path(dir.value() + "/cgroup.procs"));
      if (!pid) return pid.error();
      pids.push_back(static_cast<pid_t>(pid.value()));
    }
    if (auto ns = root_.read(dir.value() + "/memory.numa_stat")) {
      const uint64_t page = root_.isLive() ? static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 4096;
      if (auto anon = parseNumaStatAnon(ns.value(), version, page,
                                        root_.path(dir.value() + "/memory.numa_stat")))
        scope.anonBytesPerNode = anon.value();
    }
  } else if (sel.command) {
    pids = pidsByCommand(*sel.command);
  } else {
    for (pid_t p : sel.pids) {
      if (pidAlive(p))
        pids.push_back(p);
      else
        ++scope.vanishedPids;
    }
  }
  pids.erase(std::remove(pids.begin(), pids.end(), self_), pids.end());
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  scope.pids = std::move(pids);
  return scope;
}

}  // namespace tierd::scope

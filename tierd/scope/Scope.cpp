#include "tierd/scope/Scope.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "tierd/scope/ProcessIdentity.h"
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

std::string dirname(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : p.substr(0, slash);
}

// readlink(2) of a path already resolved under the root; "" when it is not a symlink.
std::string readLink(const std::string& resolved) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(resolved.c_str(), buf, sizeof buf - 1);
  return n <= 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

// Follows symlinks of the absolute path `abs` (at most 8 hops, each read under `root`) and
// returns the final absolute path, as the kernel would resolve it inside that root.
std::string resolveLinks(const sys::SysRoot& root, std::string abs) {
  for (int hop = 0; hop < 8; ++hop) {
    std::string target = readLink(root.path(abs));
    if (target.empty()) break;
    abs = target[0] == '/' ? target : dirname(abs) + "/" + target;
  }
  return abs;
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

Result<std::map<NodeId, uint64_t>> parseNumaStatLine(std::string_view text, const std::string& key,
                                                     int cgroupVersion, uint64_t pageSize,
                                                     const std::string& context) {
  // v1: "hierarchical_<key>=" (this cgroup and its descendants) is preferred over "<key>=".
  std::optional<std::map<NodeId, uint64_t>> own;
  size_t lineNo = 0;
  for (const std::string& line : split(text, '\n')) {
    ++lineNo;
    const std::string where = context + ":" + std::to_string(lineNo);
    auto f = split(line, ' ');
    if (f.empty()) continue;
    const bool v1Hier = cgroupVersion == 1 && f[0].rfind("hierarchical_" + key + "=", 0) == 0;
    const bool v1Own = cgroupVersion == 1 && f[0].rfind(key + "=", 0) == 0;
    const bool v2 = cgroupVersion == 2 && f[0] == key;
    if (!v1Hier && !v1Own && !v2) continue;
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
    if (v1Own) {
      own = std::move(out);
      continue;
    }
    return out;
  }
  if (own) return *own;
  return Error::input("no " + key + " line", context);
}

Result<std::map<NodeId, uint64_t>> parseNumaStatAnon(std::string_view text, int cgroupVersion,
                                                     uint64_t pageSize,
                                                     const std::string& context) {
  return parseNumaStatLine(text, "anon", cgroupVersion, pageSize, context);
}

SysRootScopeProvider::SysRootScopeProvider(sys::SysRoot root, pid_t selfPid)
    : root_(std::move(root)), self_(selfPid) {}

Status SysRootScopeProvider::refreshMounts() {
  auto text = root_.read("/proc/self/mountinfo");
  if (!text) return text.error();
  auto mounts = parseCgroupMounts(text.value(), root_.path("/proc/self/mountinfo"));
  if (!mounts) return mounts.error();
  mounts_ = std::move(mounts.value());
  return Ok{};
}

Result<std::string> SysRootScopeProvider::cgroupDir(const std::string& path, int& version) const {
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

Status SysRootScopeProvider::cgroupPids(const std::string& dir, int depth, std::vector<pid_t>& pids,
                                        WorkloadScope& scope) const {
  auto procs = root_.read(dir + "/cgroup.procs");
  if (!procs) {
    // A descendant removed while we walk (ENOENT, ENODEV) or a threaded one (EOPNOTSUPP: its
    // processes are listed at its domain) is not an error; the selected cgroup itself is.
    if (depth > 0) return Ok{};
    return procs.error();
  }
  ++scope.cgroupsWalked;
  for (const std::string& line : split(procs.value(), '\n')) {
    auto pid = sys::parseU64(line, root_.path(dir + "/cgroup.procs"));
    if (!pid) {
      if (depth > 0) return Ok{};
      return pid.error();
    }
    pids.push_back(static_cast<pid_t>(pid.value()));
  }
  auto entries = root_.list(dir);
  if (!entries) return depth > 0 ? Status(Ok{}) : Status(entries.error());
  for (const std::string& e : entries.value()) {
    const std::string child = dir + "/" + e;
    if (!root_.exists(child + "/cgroup.procs")) continue;  // a control file, not a cgroup
    if (depth + 1 > kMaxCgroupDepth) {
      // Not walked (the walk recurses per level): this branch's processes are not in scope.
      scope.skippedCgroups.push_back(root_.path(child));
      continue;
    }
    if (Status s = cgroupPids(child, depth + 1, pids, scope); !s) return s;
  }
  return Ok{};
}

bool SysRootScopeProvider::goesBy(const std::string& dir, const std::string& command,
                                  std::string comm) const {
  while (!comm.empty() && comm.back() == '\n')
    comm.pop_back();
  if (!comm.empty() && comm == command.substr(0, 15)) return true;
  auto cmdline = root_.read(dir + "/cmdline");
  if (!cmdline) return false;
  const std::string& text = cmdline.value();
  const std::string argv0 = text.substr(0, text.find_first_of(std::string("\0 ", 2)));
  return !argv0.empty() && basename(argv0) == command;
}

bool SysRootScopeProvider::exeMatches(const std::string& dir, const std::string& command,
                                      const std::string& comm, std::string exe,
                                      const ExecutableId& id) const {
  // Kernel threads have no exe link (readlink fails): never ours to move.
  if (exe.empty()) return false;
  static const std::string kDeleted = " (deleted)";  // the binary was replaced on disk
  if (exe.size() > kDeleted.size() &&
      exe.compare(exe.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0)
    exe.resize(exe.size() - kDeleted.size());
  // Files are compared by (device, inode) where both can be stat'ed (the live system: stat of
  // /proc/PID/exe is the executable itself, in whatever mount namespace it runs), so a file at
  // the same path in another mount namespace is not ours and "../" or merged-/usr links resolve;
  // by resolved path otherwise (fixture trees, whose exe links name paths inside the tree).
  // `id` is that stat on the live system (readExecutable), taken before the link was read.
  const bool exeStat = root_.isLive();
  auto sameFile = [&](const std::string& resolvedPath) {
    struct stat st {};
    if (::stat(resolvedPath.c_str(), &st) != 0) return false;
    return static_cast<uint64_t>(st.st_dev) == id.device &&
           static_cast<uint64_t>(st.st_ino) == id.inode;
  };
  if (command[0] == '/') {
    if (exeStat) return sameFile(root_.path(command));
    return exe == command || exe == resolveLinks(root_, command);
  }
  if (basename(exe) == command) return true;
  // A symlink of that name next to the executable (Debian: redis-server -> redis-check-rdb),
  // looked up in the process's own root (a container's /usr/bin, not the host's), and only for a
  // process that goes by that name: its comm (the kernel's copy of the exec'ed name, 15 bytes)
  // or the first word of its argv[0] (redis rewrites its cmdline to "redis-server *:6379"). A
  // multi-call binary such as busybox has a symlink next to it for every applet, so without this
  // `command = "bc"` selected every busybox `sh` and `sleep` (seen in the rig's gapbs scenario).
  if (!goesBy(dir, command, comm)) return false;
  const std::string sibling = dirname(exe) + "/" + command;
  if (exeStat) return sameFile(root_.path(dir + "/root" + sibling));
  return !readLink(root_.path(sibling)).empty() && resolveLinks(root_, sibling) == exe;
}

bool SysRootScopeProvider::uidMatches(pid_t pid, uid_t uid) const {
  auto status = root_.read("/proc/" + std::to_string(pid) + "/status");
  if (!status) return false;
  for (const std::string& line : split(status.value(), '\n')) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::string real;
    fields >> real;
    auto v = sys::parseU64(real, "/proc/" + std::to_string(pid) + "/status");
    return v && v.value() == uid;
  }
  return false;
}

Result<std::vector<std::string>> SysRootScopeProvider::procEntries() {
  if (pass_ && pass_->procEntries) return *pass_->procEntries;
  auto entries = root_.list("/proc");
  if (entries && pass_) pass_->procEntries = entries.value();
  return entries;
}

std::string SysRootScopeProvider::commOf(pid_t pid) {
  if (pass_)
    if (auto it = pass_->comms.find(pid); it != pass_->comms.end()) return it->second;
  std::string comm = root_.read("/proc/" + std::to_string(pid) + "/comm").valueOr("");
  if (pass_) pass_->comms.emplace(pid, comm);
  return comm;
}

std::vector<pid_t> SysRootScopeProvider::pidsByCommand(const std::string& command,
                                                       std::map<pid_t, ExecutableId>& executables) {
  std::vector<pid_t> out;
  auto entries = procEntries();
  if (!entries || command.empty()) return out;
  CommandScan& scan = commandScans_[command];
  const bool rescan = scan.passes++ % kCommandRescanPasses == 0;
  std::map<pid_t, NotMatching> notMatching;
  for (const std::string& e : entries.value()) {
    auto parsed = sys::parseU64(e, "/proc");
    if (!parsed) continue;
    const auto pid = static_cast<pid_t>(parsed.value());
    const auto known = scan.notMatching.find(pid);
    if (!rescan && known != scan.notMatching.end() && known->second.noExe) {
      notMatching.insert(*known);  // a kernel thread (or zombie): not even its comm is read
      continue;
    }
    const std::string comm = commOf(pid);
    if (!rescan && !comm.empty() && known != scan.notMatching.end() && known->second.comm == comm) {
      notMatching.insert(*known);
      continue;
    }
    const std::string dir = "/proc/" + e;
    // The executable before the link: an exec between the two reads leaves `id` on the old file,
    // which the engine's handle (opened after this pass) then does not match: not adopted.
    auto id = readExecutable(root_, pid);
    std::string exe = !id              ? std::string()
                      : root_.isLive() ? readLink(root_.path(dir + "/exe"))
                                       : id->link;
    const bool noExe = exe.empty();
    if (id && exeMatches(dir, command, comm, std::move(exe), id.value())) {
      out.push_back(pid);
      executables[pid] = id.value();
    } else if (!comm.empty()) {
      notMatching.emplace(pid, NotMatching{comm, noExe});
    }
  }
  scan.notMatching = std::move(notMatching);  // pids no longer listed are forgotten
  return out;
}

Result<WorkloadScope> SysRootScopeProvider::resolve(const WorkloadSelector& sel) {
  WorkloadScope scope;
  scope.name = sel.name;
  std::vector<pid_t> pids;
  std::map<pid_t, ExecutableId> executables;
  if (sel.cgroup) {
    int version = 2;
    auto dir = cgroupDir(*sel.cgroup, version);
    if (!dir) return dir.error().within("workload '" + sel.name + "'");
    scope.cgroupDir = root_.path(dir.value());
    struct stat st;
    if (::stat(scope.cgroupDir.c_str(), &st) == 0) scope.cgroupInode = st.st_ino;
    if (Status s = cgroupPids(dir.value(), 0, pids, scope); !s)
      return s.error().within("workload '" + sel.name + "'");
    if (!scope.skippedCgroups.empty())
      scope.problems.push_back(
          "workload '" + sel.name + "': " + std::to_string(scope.skippedCgroups.size()) +
          " cgroup(s) more than " + std::to_string(kMaxCgroupDepth) + " levels below " +
          scope.cgroupDir +
          " not read, their processes not in scope (first: " + scope.skippedCgroups.front() + ")");
    if (auto ns = root_.read(dir.value() + "/memory.numa_stat")) {
      const uint64_t page = root_.isLive() ? static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 4096;
      const std::string where = root_.path(dir.value() + "/memory.numa_stat");
      auto anon = parseNumaStatLine(ns.value(), "anon", version, page, where);
      auto file = parseNumaStatLine(ns.value(), "file", version, page, where);
      if (anon && file) {
        scope.anonBytesPerNode = anon.value();
        scope.fileBytesPerNode = file.value();
      }
    }
  } else if (sel.command) {
    pids = pidsByCommand(*sel.command, executables);
  } else {
    pids = pinnedPids(sel, scope);
  }
  pids.erase(std::remove(pids.begin(), pids.end(), self_), pids.end());
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  for (pid_t p : pids) {
    if (sel.uid && !uidMatches(p, *sel.uid)) continue;
    auto start = readStartTime(root_, p);
    if (!start) continue;  // exited since it matched
    scope.startTimes[p] = start.value();
    scope.pids.push_back(p);
    if (auto it = executables.find(p); it != executables.end()) scope.executables.insert(*it);
  }
  return scope;
}

std::vector<pid_t> SysRootScopeProvider::pinnedPids(const WorkloadSelector& sel,
                                                    WorkloadScope& scope) {
  std::vector<pid_t> pids;
  bool changed = false;
  // Entries that left the pid list lose their pin (a pid listed again is pinned afresh).
  for (auto it = pinned_.lower_bound({sel.name, 0});
       it != pinned_.end() && it->first.first == sel.name;) {
    if (std::find(sel.pids.begin(), sel.pids.end(), it->first.second) == sel.pids.end()) {
      it = pinned_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  for (pid_t p : sel.pids) {
    auto start = readStartTime(root_, p);
    if (!start) {
      ++scope.vanishedPids;
      continue;
    }
    // Pinned to the first process seen with this pid; a later holder is another process.
    auto [it, fresh] = pinned_.emplace(std::make_pair(sel.name, p), start.value());
    changed = changed || fresh;
    if (!fresh && it->second != start.value()) {
      ++scope.vanishedPids;
      continue;
    }
    pids.push_back(p);
  }
  if (changed && !pinFile_.empty())
    if (Status st = writePins(); !st)
      scope.problems.push_back("workload '" + sel.name +
                               "': pins not recorded (a restart may pin a pid to a new process): " +
                               st.error().describe());
  return pids;
}

Status SysRootScopeProvider::keepPins(const std::string& file, const std::string& owner) {
  pinFile_.clear();
  if (owner.find('\n') != std::string::npos)
    return Error::input("a pins owner holds a newline", file);
  auto boot = root_.readAttr("/proc/sys/kernel/random/boot_id");
  if (!boot) return boot.error();
  bootId_ = boot.value();
  pinOwner_ = owner;
  pinFile_ = file;
  auto text = sys::SysRoot::live().read(file);  // `file` is a host path, not under the root
  if (!text) return text.error().code == ENOENT ? Status(Ok{}) : Status(text.error());
  std::map<std::pair<std::string, pid_t>, uint64_t> read;
  size_t lineNo = 0;
  for (const std::string& line : split(text.value(), '\n')) {
    const std::string where = file + ":" + std::to_string(++lineNo);
    if (lineNo == 1) {
      if (line.rfind("boot_id=", 0) != 0) return Error::input("expected boot_id=", where);
      if (line.substr(8) != bootId_) return Ok{};  // another boot's: its start times mean nothing
      continue;
    }
    if (lineNo == 2) {
      if (line.rfind("owner=", 0) != 0) return Error::input("expected owner=", where);
      if (line.substr(6) != pinOwner_) return Ok{};  // another config's pids
      continue;
    }
    auto f = split(line, ' ');
    if (f.size() != 3) return Error::input("expected WORKLOAD PID START_TIME", where);
    auto pid = sys::parseU64(f[1], where);
    auto start = sys::parseU64(f[2], where);
    if (!pid) return pid.error();
    if (!start) return start.error();
    if (pid.value() == 0 || pid.value() > 4194304) return Error::input("pid out of range", where);
    read[{f[0], static_cast<pid_t>(pid.value())}] = start.value();
  }
  pinned_ = std::move(read);
  return Ok{};
}

Status SysRootScopeProvider::writePins() const {
  const std::string dir = dirname(pinFile_);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::sys(errno, "cannot create the folder of the pins", dir);
  const std::string tmp = pinFile_ + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "boot_id=" << bootId_ << "\nowner=" << pinOwner_ << "\n";
    for (const auto& [key, start] : pinned_)
      out << key.first << " " << key.second << " " << start << "\n";
    out.flush();
    if (!out) return Error::sys(EIO, "cannot write the pins", tmp);
  }
  if (::rename(tmp.c_str(), pinFile_.c_str()) != 0)
    return Error::sys(errno, "cannot rename the pins into place", pinFile_);
  return Ok{};
}

}  // namespace tierd::scope

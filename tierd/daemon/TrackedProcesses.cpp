#include "tierd/daemon/TrackedProcesses.h"

#include <utility>

namespace tierd::daemon {

TrackedProcesses::TrackedProcesses(sys::SysRoot root) : root_(std::move(root)) {}

bool TrackedProcesses::admit(pid_t pid, const Scoped& s) {
  auto handle = scope::ProcessHandle::open(root_, pid);
  if (!handle || handle->startTime() != s.startTime ||
      (s.executable && handle->executable() != s.executable))
    return false;
  Proc proc;
  proc.workload = s.workload;
  proc.holdExecutable = s.executable.has_value();
  proc.handle = std::move(handle.value());
  procs_.emplace(pid, std::move(proc));
  return true;
}

std::vector<GoneProcess> TrackedProcesses::gone(const std::map<pid_t, Scoped>& scoped) const {
  std::vector<GoneProcess> out;
  for (const auto& [pid, proc] : procs_) {
    auto s = scoped.find(pid);
    // A new process holds the pid: in scope with another start time, or out of it (a `pids`
    // selector stays with the first process it saw) while the pid is alive with another one.
    bool reused = s != scoped.end() && s->second.startTime != proc.handle.startTime();
    if (s == scoped.end()) {
      auto start = scope::readStartTime(root_, pid);
      reused = start && start.value() != proc.handle.startTime();
    }
    // Still matched, but after an exec into another executable (the scope read the new one):
    // a new process image, to be admitted afresh with its new identity.
    const bool execd = !reused && s != scoped.end() && s->second.executable &&
                       proc.handle.executable() != s->second.executable;
    if (s == scoped.end() || s->second.workload != proc.workload || reused || execd)
      out.push_back({pid, proc.workload,
                     reused  ? GoneReason::PidReused
                     : execd ? GoneReason::Execd
                             : GoneReason::Left});
  }
  return out;
}

void TrackedProcesses::erase(pid_t pid) {
  procs_.erase(pid);
}

std::optional<policy::WorkloadId> TrackedProcesses::workloadOf(pid_t pid) const {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return std::nullopt;
  return it->second.workload;
}

std::vector<pid_t> TrackedProcesses::pids() const {
  std::vector<pid_t> out;
  out.reserve(procs_.size());
  for (const auto& entry : procs_)
    out.push_back(entry.first);
  return out;
}

std::vector<pid_t> TrackedProcesses::pidsOf(policy::WorkloadId w) const {
  std::vector<pid_t> out;
  for (const auto& [pid, proc] : procs_)
    if (proc.workload == w) out.push_back(pid);
  return out;
}

bool TrackedProcesses::stillSame(pid_t pid) const {
  auto it = procs_.find(pid);
  return it != procs_.end() && it->second.handle.stillSame(root_) &&
         (!it->second.holdExecutable || it->second.handle.sameExecutable(root_));
}

bool TrackedProcesses::exitedSinceScope(pid_t pid) const {
  auto it = procs_.find(pid);
  return it != procs_.end() && !it->second.handle.stillSame(root_);
}

}  // namespace tierd::daemon

#include "tierd/daemon/ScopeTracker.h"

#include <algorithm>

namespace tierd::daemon {
namespace {

scope::WorkloadSelector toScopeSelector(const policy::WorkloadConfig& w) {
  scope::WorkloadSelector s;
  s.name = w.name;
  switch (w.selector.kind) {
    case policy::WorkloadSelector::Kind::Cgroup:
      s.cgroup = w.selector.cgroup;
      break;
    case policy::WorkloadSelector::Kind::Pids:
      s.pids = w.selector.pids;
      break;
    case policy::WorkloadSelector::Kind::Command:
      s.command = w.selector.command;
      break;
  }
  if (w.selector.uid) s.uid = static_cast<uid_t>(*w.selector.uid);
  return s;
}

}  // namespace

ScopeTracker::ScopeTracker(std::unique_ptr<scope::ScopeProvider> provider)
    : provider_(std::move(provider)) {}

void ScopeTracker::setProvider(std::unique_ptr<scope::ScopeProvider> provider) {
  provider_ = std::move(provider);
}

void ScopeTracker::forgetWorkload(const std::string& name) {
  cgroupInodes_.erase(name);
}

ScopePass ScopeTracker::refresh(const policy::CompiledConfig& config, TickReport& report,
                                EngineTotals& totals) {
  ScopePass pass;
  // Only cgroup selectors resolve against the mounts: without one, /proc/self/mountinfo is not
  // read at all (under TCG ~2 ms a tick).
  const bool anyCgroup = std::any_of(
      config.workloads.begin(), config.workloads.end(), [](const policy::WorkloadConfig& w) {
        return w.selector.kind == policy::WorkloadSelector::Kind::Cgroup;
      });
  if (Status s = anyCgroup ? provider_->refreshMounts() : Status(Ok{}); !s) {
    report.problems.push_back("cgroup mounts: " + s.error().describe());
  }
  provider_->beginPass();
  for (size_t i = 0; i < config.workloads.size(); ++i) {
    const policy::WorkloadConfig& w = config.workloads[i];
    auto scope = provider_->resolve(toScopeSelector(w));
    if (!scope) {
      ++totals.scopeErrors;
      report.problems.push_back(scope.error().describe());
      continue;
    }
    std::vector<std::string>& said = problemsSaid_[w.name];
    for (const std::string& p : scope->problems)
      if (std::find(said.begin(), said.end(), p) == said.end()) report.problems.push_back(p);
    said = scope->problems;
    if (!scope->anonBytesPerNode.empty() || !scope->fileBytesPerNode.empty()) {
      auto& perNode = pass.numaStat[i];
      for (const auto& [node, bytes] : scope->anonBytesPerNode)
        perNode[node].anon = bytes;
      for (const auto& [node, bytes] : scope->fileBytesPerNode)
        perNode[node].file = bytes;
    }
    if (scope->cgroupInode) {
      auto [it, inserted] = cgroupInodes_.emplace(w.name, *scope->cgroupInode);
      if (!inserted && it->second != *scope->cgroupInode) {
        // The cgroup was removed and created again: a new workload instance, fresh history.
        report.problems.push_back("workload '" + w.name + "': cgroup re-created, history reset");
        pass.recreated.push_back(static_cast<policy::WorkloadId>(i));
        it->second = *scope->cgroupInode;
      }
    }
    if (scope->pids.empty()) {
      // Said once per stretch of emptiness, not every tick.
      if (emptyReported_.insert(w.name).second)
        report.problems.push_back("workload '" + w.name + "': selector matches no process" +
                                  (scope->cgroupsWalked
                                       ? " (" + std::to_string(scope->cgroupsWalked) +
                                             " cgroups read, the selected one and its descendants)"
                                       : std::string()));
    } else {
      emptyReported_.erase(w.name);
    }
    for (pid_t pid : scope->pids) {
      Scoped sc{static_cast<policy::WorkloadId>(i), scope->startTimes[pid], std::nullopt};
      if (auto exe = scope->executables.find(pid); exe != scope->executables.end())
        sc.executable = exe->second;
      pass.scoped.emplace(pid, std::move(sc));
    }
  }
  return pass;
}

}  // namespace tierd::daemon

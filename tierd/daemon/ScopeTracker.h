#pragma once
/// \file
/// ScopeTracker: resolves every configured workload's scope once per tick through the
/// ScopeProvider seam (tierd/scope: cgroup, pids or executable selectors): the pids in scope with
/// their start time (and, for a `command` workload, the executable they matched with), the
/// cgroup's memory.numa_stat per node, and what changed since the last pass that is worth saying
/// once (a provider problem, a workload that matches no process, a cgroup re-created). Owned and
/// called by one thread (the engine's). Depends on tierd_scope and tierd_policy.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "policy/Config.h"
#include "policy/TickContext.h"
#include "tierd/daemon/TickReport.h"
#include "tierd/scope/ProcessIdentity.h"
#include "tierd/scope/Scope.h"

namespace tierd::daemon {

/// A scoped process of this tick: its workload and the start time the scope read, and for a
/// `command` workload the executable it matched with (WorkloadScope::executables).
struct Scoped {
  policy::WorkloadId workload = 0;  ///< index into CompiledConfig::workloads
  uint64_t startTime = 0;           ///< /proc/PID/stat field 22, clock ticks since boot
  std::optional<scope::ExecutableId> executable;
};

/// What one pass of ScopeTracker::refresh found.
struct ScopePass {
  std::map<pid_t, Scoped> scoped;  ///< every pid in a workload's scope (a pid once, first match)
  /// memory.numa_stat per workload index (anon and file bytes per node), for the workloads whose
  /// cgroup has a readable one.
  std::map<size_t, std::map<NodeId, sys::NodeMemory>> numaStat;
  /// Workloads whose cgroup was removed and created again since the last pass (a new workload
  /// instance: the caller resets its history), ascending.
  std::vector<policy::WorkloadId> recreated;
};

/// The workloads' scopes across ticks.
class ScopeTracker {
 public:
  /// `provider` must not be null.
  explicit ScopeTracker(std::unique_ptr<scope::ScopeProvider> provider);
  /// Replaces the provider (Engine::setScopeProvider); `provider` must not be null.
  void setProvider(std::unique_ptr<scope::ScopeProvider> provider);

  /// Resolves each workload of `config` in order (refreshing the cgroup mounts first when a
  /// workload selects by cgroup). A selector that fails to resolve is counted
  /// (EngineTotals::scopeErrors) and said in report.problems; so are, once each, a mount refresh
  /// failure, a provider problem when it appears, "workload 'W': selector matches no process"
  /// per stretch of emptiness and "workload 'W': cgroup re-created, history reset".
  ScopePass refresh(const policy::CompiledConfig& config, TickReport& report, EngineTotals& totals);
  /// Forgets the cgroup inode seen for workload `name` (its selector changed: no re-creation to
  /// report).
  void forgetWorkload(const std::string& name);

 private:
  std::unique_ptr<scope::ScopeProvider> provider_;
  std::map<std::string, uint64_t> cgroupInodes_;  ///< workload name -> cgroup inode last seen
  std::set<std::string> emptyReported_;           ///< workloads whose "matches no process" was said
  /// Per workload name: the provider's problems (WorkloadScope::problems) said last pass; a
  /// problem is said when it appears, not every tick while it lasts.
  std::map<std::string, std::vector<std::string>> problemsSaid_;
};

}  // namespace tierd::daemon

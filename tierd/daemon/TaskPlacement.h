#pragma once
/// \file
/// TaskPlacement: where the policy may put a tracked process's pages this tick: its home nodes
/// (the nodes of the CPUs in Cpus_allowed_list) and allowed nodes (Mems_allowed_list), from
/// /proc/PID/status; a cpuset that excludes every node of a tier is said once per stretch. Also
/// the policy's view of the machine (free memory per node and distances) that the
/// tick's snapshot starts from. Owned and called by one thread (the engine's). Depends on
/// tierd_topology, tierd_policy and tierd_sys.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "policy/Config.h"
#include "policy/TickContext.h"
#include "tierd/daemon/TickReport.h"
#include "tierd/sys/SysRoot.h"
#include "tierd/topology/Topology.h"

namespace tierd::daemon {

/// The policy's view of the machine at `nowNs` without workloads or tasks: `config` (its
/// daemon.dry_run too), the base page size (4096 when the topology has none), each node of a
/// tier with its total and free memory, free huge pages and free PMD-order blocks, and the SLIT
/// distances of every node.
policy::TickContext machineContext(uint64_t nowNs,
                                   std::shared_ptr<const policy::CompiledConfig> config,
                                   const topology::Topology& topo);

/// The tracked processes' placement, read each tick.
class TaskPlacement {
 public:
  /// Reads /proc/PID/status under `root`.
  explicit TaskPlacement(sys::SysRoot root);

  /// Home and allowed nodes of `pid` on `topo`. nullopt when /proc/PID/status cannot be read:
  /// counted (EngineTotals::statusErrors) and said in report.problems ("pid P: placement
  /// unknown: ...") unless `exited(pid)` (the process left since the scope pass). A cpuset.mems
  /// that excludes every node of a tier is said in report.problems when it changes ("pid P:
  /// cpuset.mems L excludes every slow node: not moved there").
  std::optional<policy::TaskNodes> read(pid_t pid, const topology::Topology& topo,
                                        const std::function<bool(pid_t)>& exited,
                                        TickReport& report, EngineTotals& totals);
  /// Forgets what was said of `pid` (it left its scope).
  void forget(pid_t pid);

 private:
  sys::SysRoot root_;
  /// Per pid: tiers (", "-joined names) its cpuset.mems excluded when last said.
  std::map<pid_t, std::string> cpusetReported_;
};

}  // namespace tierd::daemon

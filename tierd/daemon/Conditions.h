#pragma once
/// \file
/// ConditionLog: what tierd says when it runs but cannot do its job. Each condition is said
/// once as a warning when it begins and once as a notice when it ends, never once per tick
/// (the log of a daemon that runs for months stays readable):
/// - "tiers": the host has no slow tier (or no fast one): nothing to move between;
/// - "workloads": the config names no [[workload]] (one whose selector matches no process is
///   said by the engine, per workload);
/// - "source": no hotness source, or one that cannot see accesses (software page faults with
///   kernel.numa_balancing=0 see only a page's first touch).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tierd/daemon/Engine.h"

namespace tierd::daemon {

/// Whether a tick's progress line (`tick N: ...`) is written, under daemon.progress_interval
/// (`intervalNs`; 0: every tick): for the first tick (`lastLineNs` empty), for a tick that
/// planned or moved bytes, saw a process enter or leave a scope or had a problem, and otherwise
/// once `intervalNs` has passed since the last line. `nowNs` and `lastLineNs` are
/// TickReport::nowNs values (monotonic).
bool wantsProgressLine(const TickReport& r, std::optional<uint64_t> lastLineNs, uint64_t nowNs,
                       uint64_t intervalNs);

/// One line to log.
struct ConditionLine {
  bool warning = false;  ///< true: the condition began (a warning); false: it ended (a notice)
  std::string text;
};

/// The conditions above, remembered between ticks so each is said when it begins and ends.
class ConditionLog {
 public:
  /// The lines that this tick's `report` changes, in the order tiers, workloads, source.
  /// `configuredWorkloads` counts the config's [[workload]] tables; `sourceName` is the hotness
  /// source every scoped process gets (chooseSource: "" when none is available); the report's
  /// topology gives the tiers and /proc/sys/kernel/numa_balancing (Topology::caps).
  std::vector<ConditionLine> update(const TickReport& report, size_t configuredWorkloads,
                                    const std::string& sourceName);
  /// The warnings of the conditions that hold now, in the order tiers, workloads, source.
  std::vector<std::string> active() const;

 private:
  // Per condition ("tiers", "workloads", "source"): the warning said while it holds.
  std::map<std::string, std::string> active_;
  void set(const std::string& key, const std::string& warning, const std::string& ended,
           std::vector<ConditionLine>& out);
};

}  // namespace tierd::daemon

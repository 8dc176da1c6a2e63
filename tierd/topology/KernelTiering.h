#pragma once
/// \file
/// KernelTieringWatch: whether the kernel's own tiering runs beside tierd, once per tick: NUMA
/// balancing's memory tiering (/proc/sys/kernel/numa_balancing, as the topology read it) or a
/// DAMOS migrate_hot/migrate_cold scheme of a running kdamond (/sys/kernel/mm/damon/admin). The
/// engine moves nothing while one runs unless migration.allow_kernel_tiering says otherwise.
/// Depends on tierd_sys only; owned and called by one thread (the engine's).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tierd/sys/SysRoot.h"
#include "tierd/topology/Topology.h"

namespace tierd::topology {

/// NUMA balancing's memory tiering, from /proc/sys/kernel/numa_balancing as the topology read it
/// (`numaBalancing`, Capabilities; bit 2, value 2 or 3: NUMA_BALANCING_MEMORY_TIERING;
/// Documentation/admin-guide/sysctl/kernel.rst): "" when off or unknown, else
/// "kernel.numa_balancing=2 (NUMA_BALANCING_MEMORY_TIERING)". The kernel's other tiering,
/// DAMOS, is damosTieringActive()'s (KernelTieringWatch::check asks it less often).
std::string numaBalancingTieringActive(std::optional<int> numaBalancing);

/// A running kdamond with a DAMOS migrate_hot or migrate_cold scheme, read under `root`
/// (/sys/kernel/mm/damon/admin/kdamonds/{nr_kdamonds,N/state,N/contexts/0/schemes/M/action}; at
/// most 256 kdamonds and schemes each): "kdamond N runs DAMOS ACTION", else "". tierd's own
/// kdamonds only use `stat`. `nrKdamonds`: the nr_kdamonds file as the caller read it ("" when
/// unreadable: then "" is the answer).
std::string damosTieringActive(const sys::SysRoot& root, std::string_view nrKdamonds);

/// What KernelTieringWatch::check found at one tick.
struct KernelTiering {
  /// The kernel's tiering running now (numaBalancingTieringActive(), else damosTieringActive():
  /// "kdamond 3 runs DAMOS migrate_hot"), "" when none.
  std::string active;
  /// `active` is not "" and the caller does not allow moving beside it: tierd moves nothing.
  bool held = false;
  /// Set when what runs changed since the last check that said something (said once, not every
  /// tick): "the kernel's own tiering runs (...): tierd moves nothing while it does ..." or
  /// "... moving anyway ...". nullopt when unchanged or when it stopped.
  std::optional<std::string> problem;
};

/// The kernel's tiering, checked once per tick, reading the kdamonds' schemes only when needed.
class KernelTieringWatch {
 public:
  /// Ticks between two scans of the kdamonds' DAMOS schemes while nr_kdamonds stays the same and
  /// none was seen: 10, 10 s at the default interval (each scan reads three files per kdamond,
  /// ~1 ms each under the rig's TCG).
  static constexpr uint64_t kRescanTicks = 10;

  /// Reads under `root` (the kdamonds' files); `caps` is this tick's topology's
  /// (Capabilities::numaBalancing). numa_balancing is looked at every call; the kdamonds' schemes
  /// (three reads per kdamond, tierd's own included) when nr_kdamonds changed, every call while
  /// a DAMOS tiering scheme was seen, else every kRescanTicks calls. `allowKernelTiering`:
  /// migration.allow_kernel_tiering.
  KernelTiering check(const sys::SysRoot& root, const Capabilities& caps, bool allowKernelTiering);

 private:
  std::string reported_;          ///< the kernel tiering last said, "" when none ran
  std::string kdamondsSeen_;      ///< nr_kdamonds at the last damosTieringActive() scan
  std::string damos_;             ///< that scan's answer
  uint64_t checksSinceScan_ = 0;  ///< check() calls since that scan
};

}  // namespace tierd::topology

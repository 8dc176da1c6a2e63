#pragma once
/// \file
/// TopologyProvider: where the tick engine gets the machine's topology, once per tick (DESIGN.md
/// "Interfaces"). Production reads the kernel's files under a SysRoot (readTopology, Topology.h);
/// the simulator answers from its modelled machine (tierd/simulate/Simulator.cpp), so it need not
/// write node meminfo files for the engine to read back.

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"
#include "tierd/topology/Topology.h"

namespace tierd::topology {

/// The topology snapshot of one tick: nodes, CPUs, total and free memory per node and per huge
/// page size, distances, kernel tiers, capabilities, each node's tier. Called by one thread (the
/// engine's); may block on file reads; holds no lock.
class TopologyProvider {
 public:
  virtual ~TopologyProvider() = default;

  /// The topology now, its nodes classified with `override` (the config's [tiers]; empty =
  /// detect). Errors as readTopology(): the topology cannot be read or classified (the engine's
  /// tick then fails and moves nothing).
  virtual Result<Topology> read(const TierOverride& override) = 0;
};

/// readTopology() under a SysRoot: every call reads the kernel's files again (the live machine
/// or a fixture tree).
class SysRootTopologyProvider final : public TopologyProvider {
 public:
  /// Reads under `root`.
  explicit SysRootTopologyProvider(sys::SysRoot root);

  /// readTopology(root, override).
  Result<Topology> read(const TierOverride& override) override;

 private:
  sys::SysRoot root_;
};

}  // namespace tierd::topology

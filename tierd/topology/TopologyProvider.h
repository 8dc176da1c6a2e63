#pragma once
/// \file
/// TopologyProvider: where the tick engine gets the machine's topology, once per tick
/// (docs/architecture.md, the seams). Production reads the kernel's files under a SysRoot
/// (readTopology, Topology.h); the simulator answers from its modelled machine
/// (tierd/simulate/Simulator.cpp), so it need not write node meminfo files for the engine to read
/// back.

#include <cstdint>
#include <optional>
#include <string>

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

/// The topology under a SysRoot (the live machine or a fixture tree), read in full by
/// readTopology() on the first call, every kFullReadEvery-th call, after an error, when the
/// override changes and when the node lists (/sys/devices/system/node/online, has_cpu,
/// has_memory: node, CPU or memory hotplug; `possible` is fixed at boot) differ from the last
/// full read's; the calls between refresh that read with refreshTopology() (free memory, free
/// huge pages, numa_balancing, migrate_offload), keeping what only changes with hotplug (CPUs,
/// distances, HMAT, memory tiers) or is only reported (THP mode, DAMON's kdamonds, ...). In the
/// rig a full read per tick cost ~50 ms of emulated CPU.
class SysRootTopologyProvider final : public TopologyProvider {
 public:
  /// Reads under `root`.
  explicit SysRootTopologyProvider(sys::SysRoot root);

  /// See the class comment. Errors as readTopology().
  Result<Topology> read(const TierOverride& override) override;

  /// Calls between two full reads, the first included (10: 10 s at the default 1 s tick).
  static constexpr uint64_t kFullReadEvery = 10;
  /// Full reads so far (tests: how often the whole tree was read).
  uint64_t fullReads() const { return fullReads_; }

 private:
  /// The three node list files' text that hotplug changes, concatenated ("" for an absent one).
  std::string nodeLists() const;

  sys::SysRoot root_;
  std::optional<Topology> last_;  ///< the last topology returned
  TierOverride lastOverride_;
  std::string lastNodeLists_;  ///< nodeLists() at the last full read
  uint64_t sinceFull_ = 0;     ///< calls since the last full read
  uint64_t fullReads_ = 0;
};

}  // namespace tierd::topology

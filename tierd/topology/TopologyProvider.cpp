#include "tierd/topology/TopologyProvider.h"

#include <utility>

namespace tierd::topology {

SysRootTopologyProvider::SysRootTopologyProvider(sys::SysRoot root) : root_(std::move(root)) {}

std::string SysRootTopologyProvider::nodeLists() const {
  std::string out;
  for (const char* f : {"online", "has_cpu", "has_memory"})
    out += root_.read(std::string("/sys/devices/system/node/") + f).valueOr("") + "\n";
  return out;
}

Result<Topology> SysRootTopologyProvider::read(const TierOverride& override) {
  const std::string lists = nodeLists();
  const bool sameOverride = override.fastNodes == lastOverride_.fastNodes &&
                            override.slowNodes == lastOverride_.slowNodes;
  // A failed refresh leaves last_ partly updated: it is read in full below.
  if (last_ && sameOverride && lists == lastNodeLists_ && ++sinceFull_ < kFullReadEvery &&
      refreshTopology(root_, *last_, override))
    return *last_;
  last_.reset();
  auto topo = readTopology(root_, override);
  if (!topo) return topo;
  ++fullReads_;
  sinceFull_ = 0;
  last_ = topo.value();
  lastOverride_ = override;
  lastNodeLists_ = lists;
  return topo;
}

}  // namespace tierd::topology

#include "tierd/topology/TopologyProvider.h"

#include <utility>

namespace tierd::topology {

SysRootTopologyProvider::SysRootTopologyProvider(sys::SysRoot root) : root_(std::move(root)) {}

Result<Topology> SysRootTopologyProvider::read(const TierOverride& override) {
  return readTopology(root_, override);
}

}  // namespace tierd::topology

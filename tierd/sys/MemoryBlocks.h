#pragma once
/// \file
/// Which NUMA node each memory block of physical memory belongs to, from sysfs
/// (Documentation/admin-guide/mm/memory-hotplug.rst): /sys/devices/system/memory/block_size_bytes
/// (hex bytes) and the `memoryN` entries of /sys/devices/system/node/nodeM/ (block N is on node
/// M). With it a page frame number (PFN, from /proc/PID/pagemap) tells the node of a page without
/// a move_pages(2) query (MovePagesMigrator::locate).

#include <cstdint>
#include <map>
#include <optional>

#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::sys {

/// The node of every online memory block listed under exactly one node.
struct MemoryBlockNodes {
  uint64_t blockBytes = 0;  ///< block_size_bytes: bytes of physical memory per block (> 0)
  /// Block number -> node. A block listed under more than one node (it spans a node boundary:
  /// the kernel links it under each node it holds pages of) is not here, nor is an offline or
  /// unlisted one: their pages' node is unknown.
  std::map<uint64_t, NodeId> nodeOfBlock;
  /// Blocks left out because more than one node lists them.
  uint64_t ambiguousBlocks = 0;

  /// The node of page frame `pfn` of `pageBytes` (the base page size), nullopt when its block is
  /// not in nodeOfBlock.
  std::optional<NodeId> nodeOfPfn(uint64_t pfn, uint64_t pageBytes) const;
};

/// Reads <root>/sys/devices/system/memory/block_size_bytes and every
/// <root>/sys/devices/system/node/nodeM/memoryN entry. Errors: Environment when either is
/// missing (no CONFIG_MEMORY_HOTPLUG sysfs, or no node directories), Input when block_size_bytes
/// is not a positive hex number.
Result<MemoryBlockNodes> readMemoryBlockNodes(const SysRoot& root);

}  // namespace tierd::sys

#pragma once
/// \file
/// An address filter over /proc/PID/maps (parsed by tierd/sys/ProcMaps.h): a sample whose address
/// is 0 or outside every mapping of its process is discarded (kernel addresses, races with munmap,
/// garbage from a misconfigured event).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <vector>

#include "tierd/sys/ProcMaps.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// Keeps each process's mappings (read through a SysRoot) for `refreshNs` and answers whether an
/// address is mapped. A process that has gone, or whose maps do not parse, has no mappings (its
/// samples are discarded).
class AddressFilter {
 public:
  AddressFilter(sys::SysRoot root, uint64_t refreshNs)
      : root_(std::move(root)), refreshNs_(refreshNs) {}
  /// True when `addr` != 0 and lies in a mapping of `pid` as of a read no older than refreshNs.
  bool contains(pid_t pid, uint64_t addr, uint64_t nowNs);

 private:
  struct Entry {
    uint64_t readNs = 0;
    std::vector<sys::SmapsVma> maps;  ///< sorted by start, as the kernel lists them
  };
  sys::SysRoot root_;
  uint64_t refreshNs_;
  std::map<pid_t, Entry> cache_;
};

}  // namespace tierd::telemetry

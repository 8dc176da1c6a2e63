#pragma once
/// \file
/// /proc/PID/maps parsing and an address filter: a sample whose address is 0 or outside every
/// mapping of its process is discarded (kernel addresses, races with munmap, garbage from a
/// misconfigured event).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// One line of /proc/PID/maps: "start-end perms offset dev inode [path]" (proc(5)).
struct Mapping {
  uint64_t start = 0;  ///< bytes, inclusive
  uint64_t end = 0;    ///< bytes, exclusive
  std::string perms;   ///< "rw-p"
  std::string path;    ///< "" for anonymous, "[heap]", a file path...
};

/// Parses /proc/PID/maps text; errors (Input) name `context` and the line number.
Result<std::vector<Mapping>> parseMaps(std::string_view text, const std::string& context);

/// Keeps each process's mappings (read through a SysRoot) for `refreshNs` and answers whether an
/// address is mapped. A process that has gone has no mappings (its samples are discarded).
class AddressFilter {
 public:
  AddressFilter(sys::SysRoot root, uint64_t refreshNs)
      : root_(std::move(root)), refreshNs_(refreshNs) {}
  /// True when `addr` != 0 and lies in a mapping of `pid` as of a read no older than refreshNs.
  bool contains(pid_t pid, uint64_t addr, uint64_t nowNs);

 private:
  struct Entry {
    uint64_t readNs = 0;
    std::vector<Mapping> maps;  ///< sorted by start
  };
  sys::SysRoot root_;
  uint64_t refreshNs_;
  std::map<pid_t, Entry> cache_;
};

}  // namespace tierd::telemetry

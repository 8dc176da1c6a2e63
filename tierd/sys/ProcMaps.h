#pragma once
/// \file
/// Strict parsers for a process's memory maps: /proc/PID/maps, /proc/PID/smaps and
/// /proc/PID/numa_maps (Documentation/filesystems/proc.rst, mm/mempolicy.c show_numa_map()).
/// Every error names the file and line ("/proc/42/smaps:17"). Sizes are returned in BYTES.
///
/// Cost note: reading smaps and numa_maps makes the kernel walk the page tables of every VMA
/// (per PMD for THP and hugetlb, per PTE for base pages); maps does not.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::sys {

/// One VMA of /proc/PID/maps or /proc/PID/smaps. The header line
/// ("7f1e8b400000-7f1e8bc00000 rw-p 00000000 00:00 0   /path") fills start..path; the smaps
/// fields are present only when parsed from smaps (`hasCounters`).
struct SmapsVma {
  uint64_t start = 0;  ///< first byte (virtual address)
  uint64_t end = 0;    ///< one past the last byte
  std::string perms;   ///< "rw-p": r/w/x/- then p (private) or s (shared)
  uint64_t offset = 0;
  std::string dev;  ///< "00:11"
  uint64_t inode = 0;
  std::string
      path;  ///< "" for anonymous, "[heap]", "/usr/lib/libc.so.6", "/anon_hugepage (deleted)"

  bool hasCounters = false;                ///< true when parsed from smaps
  std::map<std::string, uint64_t> fields;  ///< every "Key: n kB" line, in bytes (e.g. "Rss")
  uint64_t rss = 0;                        ///< bytes, "Rss:"
  uint64_t anonHugePages = 0;              ///< bytes, "AnonHugePages:" (PMD-mapped anon THP)
  uint64_t kernelPageSize = 0;             ///< bytes, "KernelPageSize:" (2 MiB/1 GiB for hugetlb)
  uint64_t mmuPageSize = 0;                ///< bytes, "MMUPageSize:"
  std::optional<bool> thpEligible;         ///< "THPeligible:" 0/1 (absent on old kernels)
  std::set<std::string> vmFlags;           ///< "VmFlags:" two-letter codes ("ht" = hugetlb)

  uint64_t size() const { return end - start; }
  /// True for a hugetlb mapping (VmFlags `ht`).
  bool hugetlb() const { return vmFlags.count("ht") != 0; }
};

/// One line of /proc/PID/numa_maps. Page counts are in units of `kernelPageSize` (base pages for
/// normal and THP mappings, huge pages for hugetlb); only pages present in the page tables are
/// counted (not-present, zero-page and special mappings are not).
struct NumaMapsVma {
  uint64_t start = 0;  ///< VMA start address (numa_maps has no end: take it from maps)
  std::string policy;  ///< "default", "bind:0-1", "prefer (many):1", "interleave=static:0-3"
  std::map<int, uint64_t> pagesPerNode;    ///< "N<node>=<pages>"
  uint64_t kernelPageSize = 0;             ///< bytes from "kernelpagesize_kB=" (0 when absent)
  bool huge = false;                       ///< "huge": a hugetlb mapping
  bool heap = false;                       ///< "heap"
  bool stack = false;                      ///< "stack"
  std::string file;                        ///< "file=" value, kernel-escaped ("\040" for blank)
  std::map<std::string, uint64_t> counts;  ///< anon=, dirty=, mapped=, mapmax=, swapcache=,
                                           ///< active=, writeback= and unknown numeric keys

  /// Sum of pagesPerNode (pages present in the page tables, in kernelPageSize units).
  uint64_t presentPages() const;
};

/// Parses /proc/PID/maps text. Errors: Input with "context:line".
Result<std::vector<SmapsVma>> parseMaps(std::string_view text, const std::string& context);
/// Parses /proc/PID/smaps text: header lines plus "Key: value kB", "THPeligible: 0|1",
/// "VmFlags: ..." lines. Every VMA must carry KernelPageSize. Errors: Input with "context:line".
Result<std::vector<SmapsVma>> parseSmaps(std::string_view text, const std::string& context);
/// Parses /proc/PID/numa_maps text. Unknown bare words are errors; unknown "key=number" fields
/// are kept in `counts`. Errors: Input with "context:line".
Result<std::vector<NumaMapsVma>> parseNumaMaps(std::string_view text, const std::string& context);

/// Reads and parses /proc/PID/maps under `root`. A vanished pid gives an Environment error
/// with code ENOENT or ESRCH.
Result<std::vector<SmapsVma>> readMaps(const SysRoot& root, pid_t pid);
/// Reads and parses /proc/PID/smaps under `root`.
Result<std::vector<SmapsVma>> readSmaps(const SysRoot& root, pid_t pid);
/// Reads and parses /proc/PID/numa_maps under `root`.
Result<std::vector<NumaMapsVma>> readNumaMaps(const SysRoot& root, pid_t pid);

/// The nodes a task may allocate on (its cpuset.mems_allowed), from the `Mems_allowed_list:` line
/// of /proc/PID/status text ("Mems_allowed_list:\t0-1,4", kernel list format, parseIdList).
/// move_pages(2) fails the whole call with -EACCES at the first entry whose target node is not in
/// this set (mm/migrate.c do_pages_move), so callers choose targets inside it. Errors: Input with
/// `context` when the line is missing or its list is malformed.
Result<std::set<int>> parseMemsAllowed(std::string_view statusText, const std::string& context);
/// Reads /proc/PID/status under `root` and returns parseMemsAllowed() of it. A vanished pid gives
/// an Environment error with code ENOENT or ESRCH. The set can change at any time (cpuset writes),
/// so it is a hint to re-read per batch, not a guarantee.
Result<std::set<int>> readMemsAllowed(const SysRoot& root, pid_t pid);

/// The CPUs a task may run on (its affinity within its cpuset), from the `Cpus_allowed_list:`
/// line of /proc/PID/status text ("Cpus_allowed_list:\t0-31,64-95"). Errors as parseMemsAllowed.
Result<std::set<int>> parseCpusAllowed(std::string_view statusText, const std::string& context);

/// Both allowed lists of one /proc/PID/status read.
struct AllowedLists {
  std::set<int> cpus;  ///< Cpus_allowed_list: CPU ids
  std::set<int> mems;  ///< Mems_allowed_list: node ids
};
/// parseCpusAllowed and parseMemsAllowed of the same text; an error if either line is bad.
Result<AllowedLists> parseAllowedLists(std::string_view statusText, const std::string& context);
/// Reads /proc/PID/status under `root` once and returns parseAllowedLists() of it. A vanished
/// pid gives an Environment error with code ENOENT or ESRCH.
Result<AllowedLists> readAllowedLists(const SysRoot& root, pid_t pid);

}  // namespace tierd::sys

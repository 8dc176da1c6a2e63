#pragma once
/// \file
/// The machine's memory topology as tierd sees it: NUMA nodes, their CPUs and memory, huge page
/// pools, distances, the kernel's memory tiers, HMAT performance, and which nodes tierd treats as
/// the fast tier (DRAM) and the slow tier (CXL), with the reason in words.
///
/// Everything is read under a SysRoot (docs/architecture.md, principle 2) from these kernel files:
///   /sys/devices/system/node/{possible,online,has_cpu,has_memory}
///   /sys/devices/system/node/nodeN/{cpulist,meminfo,distance}
///   /sys/devices/system/node/nodeN/hugepages/hugepages-<size>kB/{nr,free}_hugepages
///   /sys/devices/system/node/nodeN/access0/initiators/{read,write}_{latency,bandwidth}, nodeX
///   /sys/devices/virtual/memory_tiering/memory_tierT/nodelist
///   /sys/kernel/mm/transparent_hugepage/{enabled,hpage_pmd_size}, /proc/buddyinfo
///   /sys/kernel/mm/numa/demotion_enabled, /proc/sys/kernel/{osrelease,numa_balancing,
///   perf_event_paranoid}, /sys/bus/event_source/devices/*, /sys/kernel/mm/damon/admin/...
///
/// Classification (first rule that applies wins; see classify()):
///   1. an explicit mapping from the config's [tiers] section;
///   2. kernel memory tiers, when memory nodes sit in two or more tiers (lowest tier = fast);
///   3. HMAT access0 read latency/bandwidth, when every memory node has it;
///   4. CPU-less memory nodes are slow, nodes with CPUs are fast, checked against distances.
/// A node with CPUs but no memory is not a memory tier. Distances alone never rank a CPU-less
/// node above a DRAM node (a CXL node may be "closer" by number than remote-socket DRAM).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::topology {

/// Which tier tierd manages a node as.
enum class Tier {
  Fast,  ///< DRAM: promotion target
  Slow,  ///< CXL or other far memory: demotion target
  None,  ///< no memory (CPU-only node): not a memory tier
};

/// "fast", "slow" or "none".
const char* tierName(Tier t);

/// A huge page pool of one size on one node
/// (nodeN/hugepages/hugepages-<kB>kB/{nr_hugepages,free_hugepages}).
struct HugePagePool {
  uint64_t pageSize = 0;  ///< bytes (2 MiB, 1 GiB, ...)
  uint64_t total = 0;     ///< pages reserved (nr_hugepages)
  uint64_t free = 0;      ///< pages free (free_hugepages)
};

/// HMAT access class 0 performance of a memory node, as the kernel exports it from the ACPI HMAT
/// (Documentation/admin-guide/mm/numaperf.rst). Each attribute may be missing.
struct HmatAccess {
  std::optional<uint64_t> readLatencyNs;
  std::optional<uint64_t> writeLatencyNs;
  std::optional<uint64_t> readBandwidthMBps;  ///< MB/s as the kernel reports it
  std::optional<uint64_t> writeBandwidthMBps;
  std::set<int> initiators;  ///< nodes listed as nodeX entries under access0/initiators
};

/// One NUMA node.
struct Node {
  int id = -1;
  bool online = false;
  std::set<int> cpus;                   ///< from nodeN/cpulist
  bool hasCpu = false;                  ///< in has_cpu
  bool hasMemory = false;               ///< in has_memory (falls back to MemTotal > 0)
  uint64_t memTotal = 0;                ///< bytes, nodeN/meminfo MemTotal
  uint64_t memFree = 0;                 ///< bytes, nodeN/meminfo MemFree
  std::vector<HugePagePool> hugePages;  ///< one per size, ascending page size
  /// Bytes in free blocks of at least PMD order (log2(hpage_pmd_size / base page size), 9 for
  /// 2 MiB THP with 4 KiB pages), all zones of the node (/proc/buddyinfo): room for THPs that
  /// move whole. nullopt when buddyinfo, the THP size or the base page size is unknown.
  std::optional<uint64_t> freePmdBlockBytes;
  std::map<int, uint64_t> distance;  ///< node id -> SLIT distance (nodeN/distance)
  std::optional<int> memoryTier;     ///< kernel memory_tier number (abstract distance chunk)
  std::optional<HmatAccess> hmat;    ///< absent when the node has no access0 directory
  Tier tier = Tier::None;            ///< tierd's classification
  std::string reason;                ///< why, in words
};

/// tierd's own kernel patches (kernel-patches/ in this repository), told by the release tag
/// `-tierdN` that kernel-patches/7.3/guest.config puts in CONFIG_LOCALVERSION (`uname -r` is
/// e.g. `7.3.4-tierd1`). N is the revision of the series; each revision includes the patches of
/// the ones before it. The tag is a claim of the kernel's builder: the patches themselves leave
/// no other trace in /proc or /sys.
struct TierdKernel {
  int revision = 0;  ///< N of `-tierdN`, >= 1
  /// Patch 1 (revision >= 1): folio_mc_copy() copies a large folio in 2 MiB chunks (migration
  /// of THP and hugetlb folios pays one machine-check-safe copy per chunk, not per 4 KiB).
  bool folioCopyChunked = false;
  /// Patch 2 (revision >= 1): move_pages(nodes=NULL) answers every address of a PMD/PUD-mapped
  /// folio from one walk, so asking for every 4 KiB address of a THP costs little more than
  /// asking once per huge page.
  bool pagesStatBatched = false;
};

/// Patch 3 of kernel-patches/ (the copy phase of migrate_pages_batch() handed to a copy engine),
/// read from /sys/kernel/mm/migrate_offload/. Present only on a kernel with the patch: the folder
/// itself is the probe (the release tag stays `-tierd1`). tierd only reads it; enabling offload
/// and choosing reasons is the operator's decision (`echo 1 > .../enable`).
struct MigrateOffload {
  bool enabled = false;                   ///< `enable`: 1 when batches may go to the engine
  std::string engine;                     ///< active word of `engine` ("threads"), "" if unreadable
  std::vector<std::string> engines;       ///< every word of `engine`, brackets removed
  std::optional<int> threads;             ///< `threads`: worker shares per batch (1-32)
  std::optional<uint64_t> minBatchBytes;  ///< `min_batch_bytes`: smaller batches copy on the CPU
  /// `reasons`: migration reasons allowed to offload, names of the kernel's
  /// migrate_reason_names[] ("numa_misplaced demotion damon" by default).
  std::vector<std::string> reasons;
  /// `counters/{batches,folios,bytes,fallbacks}`: totals since boot; nullopt if unreadable.
  /// fallbacks counts folios the engine was given and the CPU then copied.
  std::optional<uint64_t> batches, folios, bytes, fallbacks;
  /// Patch 6 (hugetlb folios offloaded too), probed by its `counters/hugetlb_folios`: the hugetlb
  /// folios the engine copied since boot (also counted in `folios`); nullopt on a kernel without
  /// the patch (no warning: patch 3 alone is a complete kernel).
  std::optional<uint64_t> hugetlbFolios;
  /// True when the kernel offloads the copy of hugetlb folios (patch 6: the counter exists).
  bool hugetlbOffloaded() const { return hugetlbFolios.has_value(); }
  /// True when tierd's own moves go to the engine: offload enabled and move_pages(2)'s reason
  /// (MR_SYSCALL, named "syscall_or_cpuset") among `reasons`.
  bool movePagesOffloaded() const;
};

/// The `-tierdN` tag of a kernel release string ("7.3.4-tierd1", also with kbuild's trailing
/// "+"); nullopt when the release has no such tag (any stock kernel) or N is not a positive
/// number. Pure.
std::optional<TierdKernel> parseTierdKernelRelease(const std::string& release);

/// What the kernel and hardware offer tierd (read-only probes; nothing is written to find out).
struct Capabilities {
  std::string kernelRelease;               ///< /proc/sys/kernel/osrelease
  std::optional<TierdKernel> tierdKernel;  ///< from kernelRelease; nullopt on a stock kernel
  std::string thpMode;               ///< active word of transparent_hugepage/enabled, "" if absent
  uint64_t pmdPageSize = 0;          ///< transparent_hugepage/hpage_pmd_size, bytes, 0 if absent
  uint64_t basePageSize = 0;         ///< bytes; sysconf on the live system, else smaps, else 0
  std::optional<int> numaBalancing;  ///< /proc/sys/kernel/numa_balancing (2 = memory tiering)
  std::optional<bool> demotionEnabled;  ///< /sys/kernel/mm/numa/demotion_enabled
  std::optional<int> perfEventParanoid;
  std::vector<std::string> perfPmus;  ///< /sys/bus/event_source/devices entries (cpu, ibs_op, ...)
  bool damonSysfs = false;            ///< /sys/kernel/mm/damon/admin exists
  std::vector<std::string> damonOperations;  ///< avail_operations of an existing context, if any
  int damonKdamonds = 0;                     ///< nr_kdamonds
  int damonKdamondsRunning = 0;              ///< kdamonds whose state is "on"
  /// /sys/kernel/mm/migrate_offload/ (kernel-patches/ patch 3); nullopt when absent.
  std::optional<MigrateOffload> migrateOffload;
};

/// The whole snapshot.
struct Topology {
  std::set<int> possible;                    ///< node ids in /sys/devices/system/node/possible
  std::set<int> online;                      ///< node ids in .../online
  std::vector<Node> nodes;                   ///< online nodes, ascending id
  std::map<int, std::set<int>> memoryTiers;  ///< kernel memory tier number -> nodes
  Capabilities caps;
  std::string method;  ///< which classification rule applied ("config", "memory-tiers", "hmat",
                       ///< "cpu-less", "single-tier")
  std::vector<std::string> warnings;  ///< things an operator should know (odd layouts)
  /// The warnings of what refreshTopology keeps from the full read (memory tiers, the reported
  /// run-time capabilities), each refresh's warnings start from them. Not in the JSON.
  std::vector<std::string> keptWarnings;

  /// The node with this id, or nullptr.
  const Node* node(int id) const;
  /// Ids of nodes in a tier, ascending.
  std::vector<int> nodesIn(Tier t) const;
};

/// Explicit tier mapping from the config ([tiers] fast_nodes / slow_nodes). Empty = detect.
struct TierOverride {
  std::set<int> fastNodes;
  std::set<int> slowNodes;
  bool empty() const { return fastNodes.empty() && slowNodes.empty(); }
};

/// Reads the topology under `root` and classifies it. Errors: missing mandatory files
/// (node/online, nodeN/meminfo, nodeN/distance) or malformed content, naming the path and text;
/// an override naming a node that does not exist or naming one node twice.
Result<Topology> readTopology(const sys::SysRoot& root, const TierOverride& override = {});

/// Re-reads into `topo`, a readTopology() result under the same `root` whose node lists
/// (online, has_cpu, has_memory) have not changed since, what a tick acts on while the nodes
/// stay: each node's meminfo (MemTotal, MemFree), its huge page pools' free_hugepages, free PMD
/// blocks (/proc/buddyinfo), numa_balancing and the migrate_offload folder; then classifies again
/// with `override` (warnings regenerated). Kept from the full read: CPUs, distances, HMAT,
/// memory tiers, the kernel release, page sizes, PMUs, the huge page pools' sizes and
/// nr_hugepages, and the run-time capabilities only reported (THP mode, demotion_enabled,
/// perf_event_paranoid, DAMON's kdamonds). Under TCG each file read costs ~1 ms of the tick; a
/// full read every tick cost ~50 ms. Errors as readTopology's for the files it reads and for a
/// bad override; `topo` is then partly updated and must be read in full.
Status refreshTopology(const sys::SysRoot& root, Topology& topo, const TierOverride& override = {});

/// Assigns Node::tier and Node::reason and Topology::method from the facts already in `topo`.
/// Pure: reads only `topo` and `override`. Errors as in readTopology for bad overrides.
Status classify(Topology& topo, const TierOverride& override);

}  // namespace tierd::topology

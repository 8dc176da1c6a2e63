#pragma once
/// \file
/// `tierctl bench tick`: the CPU cost of the daemon's tick for one process with many VMAs of THP
/// (docs/tiering.md, "What a tick costs"), on this host. A forked child maps `sizeBytes` of
/// anonymous memory as `vmas` separate read-write VMAs (2 MiB aligned, MADV_HUGEPAGE, PROT_NONE
/// gaps between them so the kernel cannot merge them), touches every page and waits. The production
/// Engine (Engine::tick, with the SysRoot-backed topology and scope providers, the production
/// MovePagesMigrator on the live kernel and the smaps/numa_maps/maps readers) then ticks with a
/// `pids = [child]` workload, in dry run: nothing is moved, whatever the machine's nodes.
/// No hotness source is started (the host's DAMON and PMU are left alone), so sampling costs
/// nothing and the arbiter plans on heat zero; what is measured is the scope, topology, locate
/// and policy phases. Runs on the calling thread; blocks for the whole run.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/daemon/Engine.h"

namespace tierd::daemon {

/// What `tierctl bench tick` runs.
struct TickBenchOptions {
  /// Anonymous memory of the child, bytes; split over `vmas` VMAs of whole 2 MiB pages (the
  /// first size/2MiB % vmas VMAs one 2 MiB page larger). Must be at least vmas x 2 MiB.
  uint64_t sizeBytes = 1ull << 30;
  uint64_t vmas = 256;  ///< read-write THP VMAs of the child, >= 1
  int ticks = 5;        ///< measured ticks of each kind (unchanged, changed), >= 1
};

/// Why a tick of the bench ran, i.e. what happened to the child since the tick before.
enum class TickKind {
  First,      ///< the first tick: the child enters the scope, its memory is read in full
  Unchanged,  ///< nothing happened to the child since the last tick
  Changed,    ///< the child mapped or unmapped one 2 MiB VMA just before this tick
};

/// "first", "unchanged", "changed": the JSON and text spelling of a TickKind.
const char* tickKindName(TickKind kind);

/// One measured Engine::tick.
struct TickSample {
  TickKind kind = TickKind::First;
  uint64_t cpuNs = 0;   ///< CPU time of the calling thread over the tick (user + system), ns
  uint64_t wallNs = 0;  ///< CLOCK_MONOTONIC over the tick, ns
  /// True when the engine read the child's smaps, locations and numa_maps in full this tick
  /// (TickReport::locatesReused == 0), false when it reused them.
  bool fullRead = false;
  PhaseCpu phases;  ///< the engine's own split of the tick's CPU (TickReport::cpu)
};

/// What the bench measured. VMA and byte figures are read from the child's /proc/PID/smaps once,
/// after the first tick and before any change (outside the measured ticks).
struct TickBenchReport {
  pid_t childPid = 0;        ///< the synthetic process (killed and reaped when the bench returns)
  uint64_t vmasPlanned = 0;  ///< the bench's read-write VMAs the child mapped (= options.vmas)
  /// The child's VMAs whose start and end are exactly those of one of the bench's VMAs: equal to
  /// vmasPlanned unless the kernel merged or split them.
  uint64_t vmasFound = 0;
  uint64_t vmasTotal = 0;     ///< every VMA of the child (its binary, libraries, stack, gaps...)
  uint64_t managedVmas = 0;   ///< VMAs the engine manages (managedMappings of the smaps read)
  uint64_t managedBytes = 0;  ///< their bytes
  uint64_t benchBytes = 0;    ///< bytes of the bench's VMAs (options.sizeBytes rounded to 2 MiB)
  uint64_t thpBytes = 0;      ///< AnonHugePages of the bench's VMAs: how much THP backs them
  std::vector<TickSample> ticks;  ///< in the order run: first, then unchanged/changed pairs
  /// Problems the engine reported (TickReport::problems), each once, in first-seen order.
  std::vector<std::string> problems;
};

/// Runs the bench: forks the child, waits until its memory is touched, ticks the engine once
/// (First), then `ticks` times an Unchanged tick followed by a change of the child's mappings
/// and a Changed tick. The child is killed (SIGKILL) and reaped on every return path, and dies
/// with the caller (PR_SET_PDEATHSIG). Errors: Input for options out of range; Environment when
/// the child cannot be created or cannot map its memory (errno and what failed, e.g. ENOMEM or
/// vm.max_map_count), when the engine's config does not compile, or when a tick fails (the
/// topology cannot be read).
Result<TickBenchReport> runTickBench(const TickBenchOptions& options);

/// Median of `ns` in milliseconds (the mean of the two middle values for an even count); 0 for
/// none.
double medianMs(std::vector<uint64_t> ns);

}  // namespace tierd::daemon

#pragma once
/// \file
/// The field's standard migration measurements (move_pages() of a GiB buffer, GiB/s as mean and
/// stddev over runs, as the linux-mm migration-offload series report them), run on this process's
/// own anonymous memory: `tierctl bench migrate` and `tierctl bench locate`. Methods are compared
/// side by side in the same run on the same buffer; JSON fields are documented in docs/migrate.md.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/migrate/Migrator.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::migrate {

/// Which memory the bench allocates.
enum class BenchPage {
  Base4k,     ///< "4k": anonymous, MADV_NOHUGEPAGE
  Thp,        ///< "thp": anonymous, 2 MiB aligned, MADV_HUGEPAGE
  Hugetlb2M,  ///< "hugetlb-2M": MAP_HUGETLB | MAP_HUGE_2MB (reserved on the source node)
  Hugetlb1G,  ///< "hugetlb-1G": MAP_HUGETLB | MAP_HUGE_1GB
};

/// Parses "4k" | "thp" | "hugetlb-2M" | "hugetlb-1G" (the page kinds `tierctl locate` prints,
/// pageKindName). Errors: Input naming the accepted values.
Result<BenchPage> parseBenchPage(const std::string& text);
/// The name parseBenchPage accepts (pageKindName of the bench's memory).
std::string benchPageName(BenchPage p);

/// mean and sample standard deviation (n-1; 0 for one value) of `v`.
struct MeanStd {
  double mean = 0;
  double stddev = 0;
};
MeanStd meanStd(const std::vector<double>& v);

/// One method's measurements over all runs.
struct MethodRuns {
  std::vector<double> seconds;     ///< wall time of the measured call(s), per run
  std::vector<double> gibPerS;     ///< size / seconds, per run
  std::vector<double> cpuSeconds;  ///< kernel CPU time of the thread (RUSAGE_THREAD), per run
  uint64_t addresses = 0;          ///< addresses passed per run (last run)
  uint64_t calls = 0;              ///< move_pages calls per run (last run)
  std::map<std::string, uint64_t> statuses;  ///< last run: "node0", "ENOENT", "EBUSY"... -> count
  uint64_t bytesMoved = 0;                   ///< tierd only: bytes counted Moved (last run)
  /// tierd only, per run: wall seconds inside its move_pages(MPOL_MF_MOVE) calls
  /// (MigrationStats::moveCallRecords); `seconds` minus this is its own work around the copies
  /// (the status query before moving, planning, the calls' own bookkeeping).
  std::vector<double> moveCallSeconds;
  /// tierd only, per run: wall seconds of the /proc/self/smaps read before the run, outside
  /// `seconds`: the daemon reads smaps once per process and tick and shares it with the migrator
  /// (ProcReads::setSmaps), so the bench times execute() the same way and this apart.
  std::vector<double> smapsSeconds;
};

/// Median of `v` (mean of the two middle values for an even count); 0 for an empty vector.
double median(std::vector<double> v);

/// Per run: GiB/s of `a` / GiB/s of `b` (the runs of one bench are paired: same buffer, same
/// run, the methods' order rotated each run); a run where `b` is 0 is skipped.
std::vector<double> pairedRatios(const MethodRuns& a, const MethodRuns& b);

/// Options of `tierctl bench migrate`.
struct MigrateBenchOptions {
  uint64_t sizeBytes = 1ull << 30;
  BenchPage page = BenchPage::Thp;
  int from = 0;
  int to = 0;
  int runs = 5;
  /// tierd's MigratorConfig::callLatencyTargetNs for the run, ns (default: the daemon's, 20 ms;
  /// [migration] call_latency_target).
  uint64_t callLatencyTargetNs = MigratorConfig{}.callLatencyTargetNs;
  /// hugetlb-2M only (`--target-pool empty`): leave no free pool page on `to` for the run (its
  /// nr_hugepages lowered by its free_hugepages, restored after), so that the kernel allocates
  /// every destination page from the buddy allocator as a temporary hugetlb folio
  /// (mm/hugetlb.c alloc_migrate_hugetlb_folio(); gigantic pages never are). Default false: `to`
  /// gets the free pool pages the run needs, as `from` always does.
  bool emptyTargetPool = false;
};

/// Result of `tierctl bench migrate`.
struct MigrateBenchReport {
  MigrateBenchOptions options;
  uint64_t pageSize = 0;                      ///< bytes per page the methods address
  std::map<std::string, MethodRuns> methods;  ///< "tierd", "raw_single_call", "per_4k"
  std::vector<bool> intact;                   ///< per run: checksum before == after every method
  bool dataIntact = true;                     ///< all runs intact
  double sourceFraction = 0;                  ///< share of pages found on `from` after first touch
  std::string hugepageNote;                   ///< what was reserved and restored, if anything
};

/// Runs the migration benchmark: allocates and first-touches `sizeBytes` on node `from` (mbind
/// MPOL_BIND), checksums it, then per run moves it `from` -> `to` with each method (tierd's
/// MovePagesMigrator, one raw move_pages call with one address per page, one call with every
/// 4 KiB address), moving it back untimed between methods when from != to, and verifies the
/// checksum after each. hugetlb sizes are reserved on the nodes through
/// /sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/nr_hugepages (under `root`) and the
/// previous values restored; with `emptyTargetPool` the free pages of `to` are released instead.
/// Errors: Input (`emptyTargetPool` with a page kind other than hugetlb-2M); Environment (THP
/// disabled, not enough huge pages, mmap failed) with what to do.
Result<MigrateBenchReport> runMigrateBench(const MigrateBenchOptions& opts,
                                           const sys::SysRoot& root);

/// Options of `tierctl bench locate`.
struct LocateBenchOptions {
  uint64_t sizeBytes = 4ull << 30;
  BenchPage page = BenchPage::Thp;  ///< Base4k or Thp
  int runs = 5;
};

/// Result of `tierctl bench locate`.
struct LocateBenchReport {
  LocateBenchOptions options;
  std::vector<double> naiveSeconds;  ///< move_pages(nodes=NULL) of every 4 KiB address, one call
  std::vector<double> tierdSeconds;  ///< MovePagesMigrator::locate
  bool identical = true;             ///< every run: tierd's per-base-page view == naive
  uint64_t naiveAddresses = 0;
  uint64_t tierdQueriedPages = 0;
  uint64_t tierdQueryCalls = 0;
  uint64_t tierdSkippedBytes = 0;
  uint64_t tierdPagemapPages = 0;
  double thpCoverage = 0;  ///< smaps AnonHugePages / size of the buffer's VMA
  double speedup() const;  ///< mean naive seconds / mean tierd seconds
};

/// Runs the locate benchmark on a first-touched buffer of this process. Errors: Environment.
Result<LocateBenchReport> runLocateBench(const LocateBenchOptions& opts, const sys::SysRoot& root);

}  // namespace tierd::migrate

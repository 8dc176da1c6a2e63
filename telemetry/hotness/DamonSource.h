#pragma once
/// \file
/// DamonSource: a HotnessSource over DAMON's sysfs interface with virtual address operations
/// (Documentation/admin-guide/mm/damon/usage.rst). It monitors one process (threads share its mm)
/// and reads region access frequencies through a `stat` scheme whose access pattern matches every
/// region (the max values default to 0, so they are set), asking the kernel for the scheme's
/// tried regions (`state` <- update_schemes_tried_regions). A snapshot yields one AccessSample per
/// 2 MiB chunk that an accessed region overlaps, weight = the sum over the regions overlapping
/// it of the region's estimated accesses per aggregation interval (damonAccessEstimate:
/// nr_accesses, the checks per aggregation that saw the sampled page accessed, turned back into
/// an access rate) x the 4 KiB pages of the chunk it covers (kDamonWeightUnit): a chunk fully
/// inside one region weighs estimate x 512, a chunk split between regions gets each region's
/// share. Where a snapshot holds several aggregations (the tracepoint path, below) the weight is
/// their mean: more checks per estimate, and region boundaries that DAMON splits and merges
/// anew each aggregation average out towards each chunk's own rate.
///
/// DAMON's checks saturate: a page touched every few ms reads as accessed in every 5 ms check, just
/// like one touched a million times per second, so a fast workload's cold and hot regions look
/// alike (docs/tiering.md). With `adaptiveSampling` the source retunes sample_us after each
/// snapshot so that the observed access ratio (sum of size x nr_accesses over size x checks per
/// aggregation) stays between accessRatioLow and accessRatioHigh: halving the interval when most
/// memory reads as accessed, doubling it when almost nothing does. It writes the new sample_us and
/// `commit` to `state` (the kernel re-reads the attributes and rescales region counts). Kernels
/// from 6.15 have intervals auto-tuning built in (monitoring_attrs/intervals/intervals_goal:
/// access_bp, aggrs, min_sample_us, max_sample_us; admin-guide/mm/damon/usage.rst): where that
/// directory exists the source hands the tuning to the kernel instead, with the goal access_bp =
/// the middle of the band (accessRatioLow + accessRatioHigh) / 2, aggrs = kIntervalsGoalAggrs and
/// the same sample_us bounds. The kernel scales sample_us and aggr_us together (their ratio, the
/// checks per aggregation, stays), and after each snapshot the source reads the tuned pair back
/// (`state` <- update_tuned_intervals). state() says which tuning is in effect: tuning=kernel,
/// tuning=tierd or (adaptiveSampling off) none. 6.12 has no intervals_goal. On 6.12 the write of
/// update_schemes_tried_regions returns once the kernel has collected the regions of the next
/// scheme apply (one aggregation interval, polled every 100 ms), and tried_regions/ then holds
/// directories 0..N-1 plus the file total_bytes.
///
/// Ownership rule (DAMON sysfs has no owner marker):
/// - We never write under a kdamond we did not create. Writing `nr_kdamonds` removes and recreates
///   every kdamond directory, so it is written only when it reads 0 (nobody else's kdamond
///   exists), by a DamonPool (DamonPool.h) that creates all of tierd's kdamonds at once and gives
///   each source one of them. Any existing kdamond means "DAMON busy: kdamond N is not ours", and
///   the caller falls back to another source.
/// - Right after `state` <- on we remember the kdamond's pid; before every later write we re-read
///   nr_kdamonds (must still be the pool's count) and, while it runs, its pid (must still be ours).
/// - stop() turns ours off and frees it in the pool; the pool's last one writes nr_kdamonds 0
///   (only while it still reads the pool's count). When the monitored process exits, the kernel
///   stops the kdamond by itself; stop() still frees it.
/// CPU budget (DamonConfig::cpuBudget > 0): at a drain at least budgetWindowNs after the window
/// began, the source reads its kdamond's CPU (utime + stime of /proc/KDAMOND_PID/stat, through
/// DamonFs: under the SysRoot in production) and adds drain()'s own thread CPU. Over the budget
/// it doubles a floor under sample_us (sampling half as often halves the kdamond's checks), up
/// to sampleBoundUs(), and commits it: as sample_us where tierd tunes or nothing does, as
/// intervals_goal/min_sample_us where the kernel tunes (it then keeps sample_us above it).
/// Adaptive sampling never goes below the floor. Under a quarter of the budget the floor halves
/// again. Each raise counts in SourceStats::budgetBackoffs; state() says the measured share, the
/// floor, and when the budget cannot be held at the bound.
/// Settled (setSettled(true): the engine's plan has been empty for a while) with
/// DamonConfig::settledCpuBudget > 0, the budget is the lower of it and cpuBudget (cpuBudget 0:
/// settledCpuBudget alone), so a source with nothing left to place samples less. Told false, it
/// writes back the intervals in effect when the settled budget first raised the floor (where the
/// kernel tunes, sample_us and aggr_us themselves: its tuner would take minutes to come down from
/// a long interval) and drops the floor, sampling as before at once. The settled budget is a
/// saving, not a limit: it raises no floor once the last access ratio is at or above
/// kSettledMaxAccessRatio (50%), since beyond it the cold regions are seen accessed nearly as
/// often as the hot ones and DAMON merges them (in the rig, gups at 20 ms: 76-84% of checks saw
/// an access, 137-349 regions left of ~490, and the heat model ranked nothing hot); the state
/// then says "settled back-off held". Over cpuBudget too, the floor rises as always.
/// Pause (setPaused; kernels with contexts/0/pause): during a settled wait longer than the
/// sampling needs (sampling.settled_damon_window), the engine pauses the kdamond and resumes it
/// pauseLeadNs() or more before the next tick. A paused kdamond keeps its regions and counts and
/// checks nothing, so its CPU falls with the share of the wait it sleeps, which the budget's
/// longer interval cannot do once the settled back-off is held. The drain after a resume
/// averages the aggregations sampled since; the heat model counts them for the whole wait
/// (policy::TickSpan). state() counts the pauses (" pauses=12") and says a failed one.
/// Read path (DamonConfig::read): by default the region counts come from the stat scheme's tried
/// regions, for which the kernel builds a sysfs directory per region on every request
/// (~500 of them, three files read each, per second). With DamonReadPath::Tracepoint the source
/// instead enables the damon:damon_aggregated event in a tracefs instance of its own,
/// instances/tierd-KDAMOND_PID, filtered to its kdamond's pid (DamonTrace.h), and at each
/// snapshot reads the instance's trace_pipe without blocking and takes every complete
/// aggregation of its target since the last read (as many as the ring buffer kept:
/// damonTraceBufferKb); no stat scheme is installed. For one aggregation the samples and weights
/// are the same as from the tried regions. Where tracefs or the event is missing, or its format is
/// not the one DamonTrace.h parses, the source uses the tried regions and state() says why
/// ("read=tried_regions (tracepoint unavailable: ...)"). stop() disables the event and removes
/// the instance.
/// Features are probed by reading what exists (files and avail_operations), never by trial writes.
/// Every explicit range is validated before writing (a zero-size region crashed kdamond on 6.12).

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/hotness/DamonTrace.h"
#include "telemetry/hotness/HotnessSource.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// update_schemes_tried_regions writes per snapshot while the answer has no regions.
inline constexpr int kTriedRegionsAttempts = 3;

/// intervals_goal/aggrs tierd writes: the kernel retunes the intervals every this many aggregation
/// intervals (the value the kernel's usage.rst recommends).
inline constexpr uint64_t kIntervalsGoalAggrs = 3;

/// Access ratio (share of a snapshot's checks that saw an access, DamonSource::accessRatio) at
/// or above which the settled budget lengthens the sample interval no further: half. Beyond it
/// the cold regions look accessed nearly as often as the hot ones (measured in the rig: gups
/// lost its hot set to DAMON's merging at 76-84%; 35-55% kept it).
inline constexpr double kSettledMaxAccessRatio = 0.5;

/// Unit of DAMON sample weights: nr_accesses is multiplied by the number of these (4 KiB pages,
/// rounded up) the region covers within the sample's 2 MiB chunk.
inline constexpr uint64_t kDamonWeightUnit = 4096;

/// The file operations DamonSource does, so tests can log them in order (awslabs/damo dry-run fs).
/// Paths are absolute kernel paths ("/sys/..."); errors carry errno and the path.
class DamonFs {
 public:
  virtual ~DamonFs() = default;
  /// A sysfs/tracefs attribute, one trailing newline and surrounding blanks stripped.
  virtual Result<std::string> readAttr(const std::string& abs) = 0;
  /// Writes `data` to an existing file.
  virtual Status write(const std::string& abs, const std::string& data) = 0;
  virtual bool exists(const std::string& abs) = 0;
  /// Entry names of a directory, sorted.
  virtual Result<std::vector<std::string>> list(const std::string& abs) = 0;
  /// mkdir(2) (tracefs: creates an instance with its own buffer and events). The default (a
  /// DamonFs without tracefs) answers Unsupported.
  virtual Status makeDir(const std::string& abs);
  /// rmdir(2) (tracefs: removes an instance; EBUSY while one of its files is open). Default:
  /// Unsupported.
  virtual Status removeDir(const std::string& abs);
  /// What a pipe-like file (tracefs trace_pipe) holds now, consumed, without blocking: opened
  /// O_NONBLOCK and read until EAGAIN or end of file. Default: Unsupported.
  virtual Result<std::string> readAvailable(const std::string& abs);
};

/// DamonFs over a SysRoot (production: the live /sys).
class SysRootDamonFs : public DamonFs {
 public:
  explicit SysRootDamonFs(sys::SysRoot root) : root_(std::move(root)) {}
  /// sys::readDamonAttr: a kdamond's `state` or `pid` read while a write holds DAMON's sysfs lock
  /// (-EBUSY) is read again.
  Result<std::string> readAttr(const std::string& abs) override {
    return sys::readDamonAttr(root_, abs);
  }
  Status write(const std::string& abs, const std::string& data) override {
    return root_.write(abs, data);
  }
  bool exists(const std::string& abs) override { return root_.exists(abs); }
  Result<std::vector<std::string>> list(const std::string& abs) override { return root_.list(abs); }
  /// mkdir(2) of the resolved path, mode 0755.
  Status makeDir(const std::string& abs) override;
  /// rmdir(2) of the resolved path.
  Status removeDir(const std::string& abs) override;
  /// open(O_RDONLY | O_NONBLOCK) and read(2) until EAGAIN or 0.
  Result<std::string> readAvailable(const std::string& abs) override;

 private:
  sys::SysRoot root_;
};

/// What DAMON sysfs shows, read-only.
struct DamonProbe {
  bool present = false;  ///< /sys/kernel/mm/damon/admin/kdamonds exists
  int nrKdamonds = 0;    ///< kdamonds/nr_kdamonds
  struct Kdamond {
    int id = 0;
    std::string state;            ///< "on"/"off"
    std::string pid;              ///< kdamond thread pid or -1
    std::string operations;       ///< operations of context 0 ("paddr", "vaddr", ...), "" if none
    std::string availOperations;  ///< avail_operations of context 0, one per line joined by ','
  };
  std::vector<Kdamond> kdamonds;
  bool usable = false;  ///< we may create our own kdamond (nr_kdamonds == 0)
  std::string why;      ///< "DAMON busy: kdamond 0 is not ours (state on, operations paddr)", ...
  /// Whether the kernel has vaddr operations: "yes", "no" or "unknown". avail_operations exists
  /// only under a kdamond's context and creating one to read it would be a trial write, so with
  /// no kdamond it is read from /proc/kallsyms: mm/damon/vaddr.c's damon_va_check_accesses is
  /// there exactly when CONFIG_DAMON_VADDR is built in (it cannot be a module).
  std::string vaddr = "unknown";
  std::string vaddrEvidence;  ///< where `vaddr` comes from, or why it is unknown
};

/// Whether probeDamon looks for vaddr operations where no kdamond exists to read avail_operations
/// from. The evidence is then /proc/kallsyms, ~120k lines the kernel formats anew on every read:
/// ~60 ms of system time on a server, 1-2 s in the rig's emulated guest, where two reads at each
/// tierd start were most of its start-up CPU.
enum class VaddrEvidence {
  Read,  ///< fill DamonProbe::vaddr from avail_operations, else /proc/kallsyms
  Skip,  ///< leave it "unknown": the caller needs only whether DAMON is there and free
};

/// Reads DAMON's sysfs state without writing anything. With VaddrEvidence::Skip, /proc/kallsyms
/// is never read and `vaddr` is "unknown" unless a kdamond's avail_operations says it.
DamonProbe probeDamon(DamonFs& fs, VaddrEvidence evidence = VaddrEvidence::Read);

/// A 2 MiB-aligned or arbitrary address range to monitor [start, end), bytes.
struct DamonRange {
  uint64_t start = 0, end = 0;
};

/// Validates ranges before they are written: non-empty, start < end, page aligned, sorted and not
/// overlapping. Errors (Input) name the offending range.
Status validateDamonRanges(const std::vector<DamonRange>& ranges, uint64_t pageSize);

/// How DamonSource reads the regions' access counts (see the file comment).
enum class DamonReadPath {
  TriedRegions,  ///< the stat scheme's tried_regions directories (DAMON sysfs)
  Tracepoint,    ///< damon:damon_aggregated in a tracefs instance of our own
};

/// Monitoring parameters (DAMON monitoring_attrs).
struct DamonConfig {
  pid_t pid = 0;                   ///< process to monitor
  std::vector<DamonRange> ranges;  ///< explicit initial regions; empty = the kernel's from mappings
  uint64_t sampleUs = 5000;        ///< sampling interval
  uint64_t aggrUs = 100000;        ///< aggregation interval
  uint64_t updateUs = 1000000;     ///< operations update interval (re-reads the mappings)
  uint64_t minRegions = 10;
  uint64_t maxRegions = 1000;
  uint64_t snapshotNs = 1000000000;  ///< how often drain() asks for tried regions
  /// Retune sample_us after each snapshot (see the file comment). Off: sampleUs stays as set.
  bool adaptiveSampling = false;
  uint64_t minSampleUs = 250;     ///< lower bound of the tuned sample_us, microseconds
  uint64_t maxSampleUs = 20000;   ///< upper bound, microseconds (also at most aggrUs / 5)
  double accessRatioLow = 0.05;   ///< below this observed access ratio: double sample_us
  double accessRatioHigh = 0.30;  ///< above it: halve sample_us
  /// CPU the sampling of this process may use, as a fraction of one core
  /// (sampling.cpu_budget_percent / 100): its kdamond's CPU plus drain()'s own, measured per
  /// window of at least budgetWindowNs (see the file comment). 0: no budget, nothing measured.
  double cpuBudget = 0;
  /// CPU budget while settled (setSettled(true)), fraction of one core
  /// (sampling.settled_cpu_budget_percent / 100); 0: settling changes nothing.
  double settledCpuBudget = 0;
  uint64_t budgetWindowNs = 1'000'000'000;  ///< shortest window the CPU is measured over, ns
  /// Clock ticks per second of /proc/PID/stat utime and stime: sysconf(_SC_CLK_TCK) (USER_HZ).
  uint64_t clockTicksPerSecond = 100;
  /// drain()'s own thread CPU clock, ns; empty: tierd::threadCpuNs (tests pass a fake one).
  std::function<uint64_t()> threadCpuNs;
  /// Where the region counts are read from. The daemon asks for the tracepoint (damonTuning),
  /// which falls back to tried regions where tracefs or the event is missing, saying why.
  DamonReadPath read = DamonReadPath::TriedRegions;
};

/// Estimated accesses per aggregation interval of a region's sampled page, from DAMON's
/// nr_accesses (`nrAccesses` of `checks` = aggr_us / sample_us checks saw an access). Assuming
/// Poisson accesses at rate r, a check sees one with p = 1 - exp(-r x sample_us), so
/// r x aggr_us = -ln(1 - p) x checks. p is capped at (checks - 0.5) / checks (a region seen in
/// every check has a rate of at least that), so the estimate is finite: at most
/// ln(2 x checks) x checks. 0 when nrAccesses is 0; nrAccesses above checks counts as checks.
double damonAccessEstimate(uint64_t nrAccesses, uint64_t checks);

class DamonPool;

/// See the file comment.
class DamonSource final : public HotnessSource {
 public:
  /// A source with a pool of its own of one kdamond and no ownership record (tierctl commands,
  /// tests). `fs` must outlive the source.
  DamonSource(DamonConfig config, DamonFs& fs);
  /// A source that takes one kdamond of `pool` (the daemon: one pool, one kdamond per sampled
  /// process). `fs` and `pool` must outlive the source.
  DamonSource(DamonConfig config, DamonFs& fs, DamonPool& pool);
  ~DamonSource() override;

  std::string name() const override { return std::string(sourceInfo(SourceKind::DamonVaddr).name); }
  /// Weighted: a sample's weight is its region's nr_accesses.
  WeightKind weightKind() const override { return sourceInfo(SourceKind::DamonVaddr).weight; }
  /// Errors: Environment "DAMON busy: kdamond N is not ours ..." when another kdamond exists;
  /// Unsupported when the kernel lacks vaddr or tried_regions; any write failure (after which
  /// our kdamond is removed again).
  Status start() override;
  /// When snapshotNs has passed since the last snapshot (by `untilNs`), reads the regions (tried
  /// regions, or the aggregations traced since the last read) and returns one sample per 2 MiB
  /// chunk an accessed region overlaps (weights: see the file comment), timeNs = untilNs. When our
  /// kdamond stopped (the process exited) returns an empty batch and marks it.
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override;
  void stop() override;
  SourceStats stats() const override { return stats_; }

  /// The monitoring parameters this source was built with.
  const DamonConfig& config() const { return config_; }
  /// True when our kdamond has stopped by itself (the monitored process is gone).
  bool targetGone() const { return targetGone_; }
  /// sample_us in effect (the configured one, the last one committed by adaptive sampling, or
  /// the kernel's tuned one as update_tuned_intervals last showed it), microseconds.
  uint64_t sampleUs() const { return sampleUs_; }
  /// aggr_us in effect (configured, or the kernel's tuned one), microseconds.
  uint64_t aggrUs() const { return aggrUs_; }
  /// True when the kernel tunes the intervals (adaptiveSampling on a kernel with intervals_goal).
  bool kernelTuning() const { return kernelTuning_; }
  /// Observed access ratio of the last snapshot (0..1; see the file comment), -1 before the first.
  double accessRatio() const { return accessRatio_; }
  /// Times adaptive sampling committed a new sample_us.
  uint64_t retunes() const { return retunes_; }
  /// Pid of our kdamond thread (kdamonds/N/pid, read when we turned it on), nullopt when none
  /// runs for us. Its CPU (/proc/PID/stat utime + stime) is sampling cost that is not tierd's
  /// own thread time.
  std::optional<pid_t> kdamondPid() const;
  /// "sample_us=500 access=23% regions=412 snapshots=17 empty=2 tuning=tierd" (tuning=kernel
  /// where the kernel's intervals_goal tunes, no tuning= with adaptiveSampling off; plus why the
  /// tuning stopped; with a CPU budget: " cpu=52.0% of 1.0% sample_us>=4000 backoffs=2", and
  /// why the budget cannot be held or measured; with DamonReadPath::Tracepoint asked for:
  /// " read=tracepoint aggregations=8" (the aggregations the last snapshot averaged) or
  /// " read=tried_regions (why the tracepoint is not used)").
  std::string state() const override;
  /// The CPU share measured over the last budget window (kdamond plus drain, fraction of one
  /// core), -1 before the first window ended or without a budget.
  double cpuRatio() const { return cpuRatio_; }
  /// The budget's lower bound on sample_us, microseconds; 0 while the budget needs none.
  uint64_t budgetFloorUs() const { return floorUs_; }
  /// See the file comment ("Settled"). Idempotent; a failed write stops the budget
  /// (state() says why), as a failed back-off does.
  void setSettled(bool settled) override;
  /// The last value setSettled() was given (false before the first call).
  bool settled() const { return settled_; }
  /// Three aggregation intervals (aggr_us in effect) in ns, so the reading after a pause holds
  /// at least two whole aggregations: the first one after a resume finishes what the pause cut
  /// short (in the rig, where an aggregation runs longer than aggr_us, one or two; with two
  /// intervals, sometimes none: docs/tiering.md, "The paused kdamond"). 0 without contexts/0/pause
  /// (a kernel whose DAMON cannot pause a context) and before start(); a stopped source or a gone
  /// target keeps its lead (setPaused() then does nothing).
  uint64_t pauseLeadNs() const override;
  /// Writes contexts/0/pause (Y or N) and commits it (`state` <- commit): paused, the kdamond
  /// keeps its regions and their counts and only sleeps (Documentation/mm/damon/design.rst,
  /// "pause"); the aggregation a pause cuts short continues at the resume. Where the kernel
  /// tunes the intervals, the tuned pair is read back first (update_tuned_intervals), since the
  /// commit re-reads sample_us and aggr_us. A failed pause writes N back and leaves sampling on;
  /// a failed resume leaves paused() true and drain() retries it. Ok without a kdamond.
  /// Errors: Unsupported (pausing where pauseLeadNs() is 0), the failed write.
  Status setPaused(bool paused) override;
  /// Our kdamond is paused (a committed pause not yet resumed).
  bool paused() const { return paused_; }
  /// Times a pause was committed since start.
  uint64_t pauses() const { return pauses_; }
  /// The read path in effect: Tracepoint only while our tracefs instance is open.
  DamonReadPath readPath() const {
    return trace_.isOpen() ? DamonReadPath::Tracepoint : DamonReadPath::TriedRegions;
  }
  /// The tracefs instance directory while the tracepoint path is in use, else "".
  const std::string& traceInstance() const { return trace_.dir(); }

 private:
  Status w(const std::string& rel, const std::string& value);  ///< write under our kdamond
  Status checkOwnership();
  std::string kd(const std::string& rel) const;

  DamonConfig config_;
  DamonFs& fs_;
  std::unique_ptr<DamonPool> ownedPool_;  ///< set by the one-kdamond constructor
  DamonPool* pool_ = nullptr;
  int slot_ = -1;         ///< our kdamond's index under kdamonds/
  bool created_ = false;  ///< we hold slot_ of pool_
  std::string kdamondPid_;
  /// Adaptive sampling after a snapshot whose observed access ratio was `ratio`.
  void retune(double ratio);
  /// The snapshot part of drain(): tried regions into samples, when one is due.
  Result<std::vector<AccessSample>> snapshot(uint64_t untilNs);
  /// The regions of the stat scheme's tried regions (update_schemes_tried_regions, retried while
  /// empty), as one aggregation; none with targetGone_ set when the kdamond stopped.
  Result<std::vector<std::vector<DamonRegionCount>>> triedRegions();
  /// Every complete aggregation in our trace instance's pipe since the last read, oldest first
  /// (none if no aggregation completed).
  Result<std::vector<std::vector<DamonRegionCount>>> traceRegions();
  /// The stat scheme whose tried regions the default read path asks for.
  Status writeStatScheme();
  /// Tracepoint path at start(), our kdamond on: opens the instance; where that fails, installs
  /// the stat scheme and commits it (the tried-regions path). Error only when that fails too.
  Status openTraceOrFallBack();
  /// The CPU budget after a drain that used `ownCpuNs` of this thread (see the file comment).
  void enforceBudget(uint64_t untilNs, uint64_t ownCpuNs);
  /// Over budget: raises the sample_us floor to twice the interval in effect, up to
  /// sampleBoundUs(), and commits it. False when already at the bound (or the commit failed).
  bool backOff();
  /// Well under budget: halves the floor (none once at the configured interval) and commits it.
  void relax();
  /// Writes `us` as sample_us (or, where the kernel tunes, intervals_goal/min_sample_us) and
  /// commits it; a failure stops the budget (budgetStopped_).
  bool commitFloor(uint64_t us);
  /// The longest sample_us the budget may ask for: maxSampleUs, and at most aggr_us / 5 (five
  /// checks per aggregation) unless the kernel tunes aggr_us along; never below the configured.
  uint64_t sampleBoundUs() const;
  /// The lowest sample_us without a budget: minSampleUs with adaptive sampling, else sampleUs.
  uint64_t baseFloorUs() const;
  /// The CPU budget in effect (fraction of one core, 0 = none): cpuBudget, or while settled the
  /// lower of it and settledCpuBudget (see the file comment).
  double budget() const;
  /// Settled, with a settled budget configured: budget() is the settled one.
  bool settledBudgetApplies() const { return settled_ && config_.settledCpuBudget > 0; }
  /// Over budget while settled, but only over the settled one, with the last access ratio at or
  /// above kSettledMaxAccessRatio: a longer interval would save CPU at the cost of the contrast
  /// the settled state relies on, so the floor stays (see the file comment).
  bool settledBackOffWouldBlur() const;
  /// One interval file under the context's monitoring_attrs, its new value and the value to
  /// put back if the commit fails.
  struct IntervalWrite {
    std::string attr;
    uint64_t value, before;
  };
  /// Writes `files` and commits; on a failure puts them back and stops the budget
  /// (budgetStopped_). True when committed.
  bool commitIntervals(const std::vector<IntervalWrite>& files);
  /// With kernelTuning_: reads the kernel's tuned sample_us and aggr_us into sampleUs_/aggrUs_
  /// (state <- update_tuned_intervals). A failure stops reading them (tuningStopped_).
  void readTunedIntervals();

  uint64_t lastSnapshotNs_ = 0;
  bool targetGone_ = false;
  uint64_t sampleUs_ = 0;
  uint64_t aggrUs_ = 0;
  bool kernelTuning_ = false;  ///< intervals_goal written: the kernel tunes, retune() does not
  double accessRatio_ = -1;
  uint64_t retunes_ = 0;
  uint64_t snapshots_ = 0;         ///< snapshots taken (tried regions read)
  uint64_t lastRegions_ = 0;       ///< regions of the last aggregation of the last snapshot
  uint64_t lastAggregations_ = 0;  ///< aggregations the last snapshot averaged
  uint64_t emptySnapshots_ = 0;    ///< update_schemes_tried_regions answers without regions
  int emptyDrainsInARow_ = 0;      ///< drains whose every answer was empty, in a row
  std::string tuningStopped_;      ///< why adaptive sampling gave up (a failed commit), "" if not
  // CPU budget (config_.cpuBudget > 0).
  bool budgetWindowOpen_ = false;
  uint64_t budgetWindowStartNs_ = 0;  ///< drain time the window began
  uint64_t budgetTicksAtStart_ = 0;   ///< kdamond utime + stime then, clock ticks
  uint64_t budgetOwnNs_ = 0;          ///< drain()'s own CPU since, ns
  double cpuRatio_ = -1;
  uint64_t floorUs_ = 0;      ///< the budget's floor on sample_us, 0 = none
  bool overAtBound_ = false;  ///< the last window was over budget at sampleBoundUs()
  /// The last window was over the settled budget and settledBackOffWouldBlur() held the floor.
  bool contrastHeld_ = false;
  std::string budgetProblem_;    ///< why the last window could not be measured, "" if it was
  std::string budgetStopped_;    ///< why the budget is no longer enforced (a failed commit)
  bool settled_ = false;         ///< setSettled()'s last value
  bool pauseSupported_ = false;  ///< contexts/0/pause exists (read at start())
  bool paused_ = false;          ///< our kdamond runs with pause = Y (committed)
  uint64_t pauses_ = 0;          ///< times setPaused(true) committed a pause
  std::string pauseProblem_;     ///< the last failed pause or resume, "" after a success
  /// sample_us and aggr_us when the settled budget first raised the floor (0: not raised since
  /// the last unsettle); written back when unsettled.
  uint64_t unsettledSampleUs_ = 0, unsettledAggrUs_ = 0;
  // Tracepoint read path (config_.read == Tracepoint).
  DamonTraceInstance trace_{fs_};
  std::string tracefs_;  ///< the tracefs mount probed at start(), "" when not usable
  std::string readWhy_;  ///< why the tracepoint path is not in use, "" when it is
  pid_t tracePid_ = 0;   ///< our kdamond's pid, the events' common_pid
  std::vector<DamonAggregatedEvent> traceTail_;  ///< an aggregation still being emitted
  uint64_t traceMalformed_ = 0;                  ///< damon_aggregated lines that did not parse
  SourceStats stats_;
};

}  // namespace tierd::telemetry

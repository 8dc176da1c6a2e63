#pragma once
/// \file
/// PerfSampler: a HotnessSource over perf_event sampling. Hardware events (PEBS, IBS; chosen by
/// PmuEvents) are opened system-wide, one per CPU per event, scoped to the workload's cgroup with
/// PERF_FLAG_PID_CGROUP so every thread is seen. Software page-fault sampling
/// (PERF_COUNT_SW_PAGE_FAULTS with PERF_SAMPLE_ADDR) is the fallback where there is no PMU; it
/// runs per cgroup the same way, or per pid (one event per thread, cpu -1; drain() opens threads
/// that appeared since its last scan, every mapsRefreshNs).
/// Rings are drained without blocking; LOST and THROTTLE records are counted; samples with
/// address 0 or outside the process's mappings are discarded. The sampler keeps its own CPU use
/// (thread CPU time spent draining / wall time) within a budget by doubling or halving the
/// sample period through PERF_EVENT_IOC_PERIOD, re-measured every second; LOST records in that
/// second count as over budget (the rings overflow, so the rate is too high to keep).

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "telemetry/hotness/AddressFilter.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/hotness/PerfEventOpener.h"
#include "telemetry/hotness/PmuEvents.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// Sample type we ask for first. When the kernel refuses an event (EINVAL), PerfSampler tries
/// again without PHYS_ADDR, then with WEIGHT instead of WEIGHT_STRUCT; the first that opens is kept
/// for every event and named in refusedSampleFields(). If none opens, the error names the attr
/// fields and the driver rule the attr breaks where tierd knows it (explainRefusal()), and the
/// sample type stays as asked.
inline constexpr uint64_t kPreferredSampleType =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_ADDR |
    PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR;

/// The software page-fault event: PERF_TYPE_SOFTWARE / PERF_COUNT_SW_PAGE_FAULTS.
EventChoice pageFaultEvent();

/// Configuration. Exactly one of cgroupPath / pid is set.
struct PerfSamplerConfig {
  std::string sourceName = "perf";  ///< name() of the source ("perf-pebs", "perf-sw-page-faults")
  std::vector<EventChoice> events;  ///< attrs from PmuEvents or pageFaultEvent()
  uint64_t sampleType = kPreferredSampleType;
  std::string cgroupPath;  ///< perf_event cgroup directory (absolute, under the SysRoot)
  pid_t pid = 0;           ///< or one process: each of its threads (new ones found by drain())
  std::vector<int> cpus;   ///< cgroup mode: CPUs to open on; empty = /sys/devices/system/cpu/online
  size_t ringPages = 64;   ///< data pages per ring (power of two)
  uint64_t period = 10007;  ///< initial sample period (events per sample); prime avoids aliasing
  uint64_t minPeriod = 1;   ///< adaptation bounds
  uint64_t maxPeriod = 1u << 24;
  double cpuBudget = 0.01;              ///< fraction of one core (0.01 = 1%) the drain loop may use
  bool filterMappings = true;           ///< discard samples outside /proc/PID/maps
  uint64_t mapsRefreshNs = 1000000000;  ///< how long a process's maps are trusted
};

/// Returns an Environment error when `needed` perf fds do not fit under the soft RLIMIT_NOFILE
/// `softLimit` with `inUse` fds already open and 64 kept spare; the message says what to raise.
Status checkFdBudget(uint64_t needed, uint64_t softLimit, uint64_t inUse);

/// The next sample period: doubles when `measured` overhead exceeds `budget`, halves when below
/// a quarter of it, stays otherwise; clamped to [minPeriod, maxPeriod].
uint64_t adaptPeriod(uint64_t period, double measured, double budget, uint64_t minPeriod,
                     uint64_t maxPeriod);

/// Rounds `period` down to a multiple of `multiple` (>= 1), never below `multiple` itself: the
/// period an event with EventChoice::periodMultiple may be given.
uint64_t alignPeriod(uint64_t period, uint64_t multiple);

/// Whether a sample's PERF_SAMPLE_DATA_SRC (union perf_mem_data_src, linux/perf_event.h) says a
/// cache served the access: mem_lvl_num L1, L2, L3, L4, L2_MHB, ANY_CACHE or LFB, or (drivers that
/// fill only the older field) mem_lvl HIT with L1, LFB, L2 or L3. 0 and "not available" are not.
bool servedByCache(uint64_t dataSrc);

/// Why the kernel may have refused `attr` for `event` with EINVAL: the driver rule it breaks where
/// tierd knows one (IBS: a period with low bits set, excludes without swfilt), then every field
/// set in the attr ("type=4 config=0x1cd config1=0x40 sample_period=10007 precise_ip=2 ...").
std::string explainRefusal(const EventChoice& event, const perf_event_attr& attr);

/// perf_event sampling source; see the file comment.
class PerfSampler final : public HotnessSource {
 public:
  PerfSampler(PerfSamplerConfig config, PerfEventOpener& opener,
              const sys::SysRoot& root = sys::SysRoot::live());
  ~PerfSampler() override;

  std::string name() const override { return config_.sourceName; }
  Status start() override;
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override;
  /// Reads every ring into the queue drain() hands out from (samples filtered as drain() says);
  /// its CPU time counts against cpuBudget like drain()'s. Errors: the first ring that broke.
  Status collect() override;
  void stop() override;
  SourceStats stats() const override { return stats_; }
  /// "period=10000 overhead=0.4%", then " dropped=PHYS_ADDR" when the kernel refused optional
  /// sample fields, " leader=mem-loads-aux" when an event is opened in a group.
  std::string state() const override;

  /// The configuration it was built with; its `period` is the one now in force.
  const PerfSamplerConfig& config() const { return config_; }
  /// The sample period now in force (events per sample).
  uint64_t period() const { return config_.period; }
  /// Last measured overhead: drain thread CPU time / wall time between drains (fraction of a core).
  double overhead() const { return overhead_; }
  /// The sample_type the kernel accepted (after dropping PHYS_ADDR/WEIGHT_STRUCT if refused).
  uint64_t sampleType() const { return config_.sampleType; }
  /// Number of perf fds open: sampling events and their group leaders.
  size_t fdCount() const;
  /// The optional sample_type fields the kernel refused and tierd dropped ("PHYS_ADDR",
  /// "WEIGHT_STRUCT"), in the order they were dropped; empty when it took everything.
  const std::vector<std::string>& refusedSampleFields() const { return refused_; }

  /// Perf events open now (rings mapped): one per event and CPU (cgroup mode) or per event and
  /// live thread (pid mode: a thread's events are closed once it has exited, so fds and locked
  /// ring memory follow the thread count instead of growing with thread churn).
  size_t openEvents() const { return rings_.size(); }

 private:
  struct Ring {
    int fd = -1;
    void* base = nullptr;
    size_t length = 0;
    pid_t tid = -1;           ///< pid mode: the thread it samples (-1 in cgroup mode)
    int leaderFd = -1;        ///< the counting group leader (mem-loads-aux), -1 when none
    bool userOnly = false;    ///< drop samples not taken in user mode (EventChoice)
    bool memoryOnly = false;  ///< drop samples a cache served (EventChoice::dropCacheServed)
  };
  Result<int> openOne(const EventChoice& event, perf_event_attr attr, pid_t pid, int cpu,
                      int groupFd, unsigned long flags);
  /// Opens `event`'s group leader on (pid, cpu): disabled, counting only, on the clock and with
  /// the privilege filter and inherit of `member` (the attr its sampling event opens with).
  Result<int> openLeader(const EventChoice& event, const perf_event_attr& member, pid_t pid,
                         int cpu, unsigned long flags);
  /// Enables one ring's event, then its leader (a group counts once its leader is enabled).
  Status enableRing(const Ring& ring);
  /// Disables, unmaps and closes one ring and its leader.
  void closeRing(const Ring& ring);
  /// Opens, maps (and, once started, enables) every event on each (pid or cgroup fd, cpu).
  Status openOn(const std::vector<std::pair<pid_t, int>>& targets, bool cgroupMode);
  /// pid mode: opens threads that appeared since the last scan (every mapsRefreshNs) and marks
  /// the ones that exited, whose events closeExitedThreads() closes after their rings are read.
  void openNewThreads(uint64_t nowNs);
  void closeExitedThreads();

  PerfSamplerConfig config_;
  PerfEventOpener& opener_;
  sys::SysRoot root_;
  AddressFilter filter_;
  std::vector<Ring> rings_;
  std::deque<AccessSample> pending_;
  SourceStats stats_;
  double overhead_ = 0;
  uint64_t lastWallNs_ = 0;
  uint64_t cpuNsSinceAdapt_ = 0;
  uint64_t lostSinceAdapt_ = 0;
  std::set<pid_t> openedTids_;
  std::set<pid_t> exitedTids_;  ///< seen gone at the last scan; closed after this drain's reads
  uint64_t lastTaskScanNs_ = 0;
  uint64_t threadOpenFailures_ = 0;
  uint64_t periodMultiple_ = 1;  ///< lcm of the events' EventChoice::periodMultiple
  std::vector<std::string> refused_;
  bool started_ = false;
};

}  // namespace tierd::telemetry

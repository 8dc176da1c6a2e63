#pragma once
/// \file
/// Which hotness source tierd can use on this machine, the events each would use and why, or why
/// not (`tierctl sampling --probe`), and building the best available one for a target.
/// Preference: hardware perf sampling (PEBS / IBS) > DAMON vaddr > software page-fault sampling.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "telemetry/hotness/DamonPool.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/HotnessSource.h"
#include "telemetry/hotness/PerfEventOpener.h"
#include "telemetry/hotness/PmuEvents.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// One candidate source.
struct SourceProbe {
  std::string name;  ///< "perf-pebs", "perf-ibs", "damon-vaddr", "perf-sw-page-faults"
  bool available = false;
  std::vector<std::string> events;  ///< event strings it would open (empty for DAMON)
  std::string why;                  ///< why it would be used, or why not
};

/// The whole probe.
struct SamplingProbe {
  CpuId cpu;                      ///< from /proc/cpuinfo (vendor "" when unreadable)
  std::vector<std::string> pmus;  ///< /sys/bus/event_source/devices
  bool hardwarePmu = false;       ///< a `cpu`, `cpu_core` or `ibs_op` event source exists
  int perfEventParanoid = 2;      ///< /proc/sys/kernel/perf_event_paranoid
  bool privileged = false;        ///< effective uid 0 (CAP_PERFMON/CAP_SYS_ADMIN assumed)
  bool sysAdmin = false;          ///< CAP_SYS_ADMIN effective (needed above paranoid 2)
  DamonProbe damon;
  std::vector<SourceProbe> sources;  ///< in order of preference
  std::string chosen;                ///< name of the first available source, "" when none
};

/// Reads everything under `root` (and DAMON through `fs`) without opening or writing anything.
/// `privileged` says whether the caller has CAP_PERFMON (root). `vaddr` says whether DAMON's
/// vaddr operations are looked for in /proc/kallsyms when no kdamond shows avail_operations
/// (probeDamon): the daemon passes VaddrEvidence::Skip (in the rig that one read was ~4 s of its
/// start-up CPU; its DamonSource checks avail_operations when it starts a kdamond), the tierctl
/// commands that print the probe read it. `sysAdmin` says whether the caller holds CAP_SYS_ADMIN
/// (capget(2)): where perf_event_paranoid is above 2 (Debian's and Ubuntu's kernel patch) no perf
/// source is available without it. The daemon, which drops CAP_SYS_ADMIN, passes false; a root
/// tierctl true.
SamplingProbe probeSampling(const sys::SysRoot& root, DamonFs& fs, bool privileged,
                            const EventOptions& options = {},
                            VaddrEvidence vaddr = VaddrEvidence::Read, bool sysAdmin = true);

/// What to sample.
struct SamplingTarget {
  std::string cgroupPath;  ///< perf_event cgroup directory, or
  pid_t pid = 0;           ///< one process
};

/// How the perf sources sample ([sampling] sample_period and cpu_budget_percent of the config).
struct PerfTuning {
  uint64_t samplePeriod = 10007;  ///< initial sample period of the hardware sources (PEBS/IBS)
  double cpuBudget = 0.01;        ///< fraction of one core each perf source's drain may use
};

/// Builds the source named `name` (one of SourceProbe::name) for `target`, not yet started.
/// `opener` and `fs` must outlive it. DAMON needs a pid; the perf sources take a pid (per-thread
/// events) or a cgroup (per-CPU events, PERF_FLAG_PID_CGROUP). DAMON uses
/// `damon`'s monitoring attributes (its pid is replaced by target.pid). The perf sources use
/// `perf`: PEBS/IBS start at its sample period, software page faults always sample every fault
/// (period 1); all of them adapt the period to its CPU budget. DAMON ignores `perf`. A DAMON
/// source takes a kdamond of `damonPool` when given (the daemon), else creates one of its own.
Result<std::unique_ptr<HotnessSource>> makeSource(
    const std::string& name, const SamplingProbe& probe, const SamplingTarget& target,
    PerfEventOpener& opener, DamonFs& fs, const sys::SysRoot& root, const DamonConfig& damon = {},
    const PerfTuning& perf = {}, DamonPool* damonPool = nullptr);

}  // namespace tierd::telemetry

#include "telemetry/metrics/DemoValues.h"

#include <ctime>
#include <map>

namespace tierd::telemetry {

void DemoFeeder::feed(MetricsSink& sink, const std::vector<std::string>& workloads) {
  const uint64_t step = step_++;
  using namespace metric;
  const double s = static_cast<double>(step);
  for (const char* dir : {"promote", "demote"}) {
    const double scale = dir[0] == 'p' ? 1.0 : 0.5;
    for (const char* ps : {"2M", "1G", "4k"}) {
      double pageBytes = ps[0] == '2' ? 2.0 * (1 << 20) : ps[0] == '1' ? 1024.0 * (1 << 20) : 4096;
      double pages = ps[0] == '1' ? 1 : 64 * scale;
      sink.add(kMigratePages, {dir, ps, "moved"}, pages);
      sink.add(kMigrateBytes, {dir, ps, "moved"}, pages * pageBytes);
      sink.add(kMigratePages, {dir, ps, "busy"}, step % 3 == 0 ? 1 : 0);
      sink.add(kMigrateBytes, {dir, ps, "busy"}, step % 3 == 0 ? pageBytes : 0);
    }
    for (int i = 0; i < 4; ++i)
      sink.observe(kMigrateCallDuration, {dir}, 0.002 + 0.004 * i * scale);
    sink.add(kMigrateSystemCpu, {dir}, 0.02 * scale);
    sink.add(kArbiterPingpongMoves, {dir}, step % 2);
  }
  sink.add(kDaemonErrors, {"migrate", "EBUSY"}, step % 2);
  sink.add(kDaemonErrors, {"sampler", "ENOENT"}, step % 5 == 0 ? 1 : 0);
  for (const char* c : {"sampler", "policy", "migrate", "scope", "topology", "metrics", "main"})
    sink.add(kDaemonCpu, {c}, 0.001 * (1 + (c[0] % 5)));
  sink.add(kDaemonTicks, {"ok"}, 1);
  sink.add(kDaemonTicks, {"failed"}, step % 7 == 0 ? 1 : 0);
  sink.set(kDaemonLastTick, {}, static_cast<double>(std::time(nullptr)));
  for (const char* src : {"perf-sw-page-faults", "damon-vaddr"}) {
    sink.add(kSamplerSamples, {src}, 1000 + 10 * s);
    sink.add(kSamplerLostSamples, {src}, step % 4 == 0 ? 3 : 0);
    sink.add(kSamplerThrottleEvents, {src}, 0);
    sink.add(kSamplerBudgetBackoffs, {src}, step % 6 == 0 ? 1 : 0);
    sink.set(kSamplerOverhead, {src}, 0.004 + 0.001 * static_cast<double>(step % 3));
    sink.set(kSamplerPeriod, {src}, src[0] == 'p' ? 10007 : 0);
    sink.set(kSamplerInterval, {src}, src[0] == 'd' ? 0.005 : 0);
  }
  sink.set(kSamplerOpenPerfEvents, {"perf-sw-page-faults"}, 8);
  sink.add(kSamplerSourceRetries, {}, step % 7 == 0 ? 1 : 0);
  sink.set(kPlacementSettled, {}, step % 20 >= 10 ? 1 : 0);
  sink.set(kTickInterval, {}, step % 20 >= 10 ? 4 : 1);
  sink.add(kSamplerPausedSeconds, {}, step % 20 >= 10 ? 1 : 0);
  sink.add(kArbiterPingpongHolds, {}, step % 3 == 0 ? 1 : 0);
  for (const char* reason :
       {"budget", "no_room", "quota", "not_allowed", "not_closer", "fill_no_room"})
    sink.add(kArbiterSkippedCandidates, {reason}, reason[0] == 'b' ? 4 : step % 2);
  sink.add(kMigrateThpSplitAfterMove, {}, step % 5 == 0 ? 1 : 0);
  sink.add(kMigrateIdentityCheckFailures, {}, 0);
  sink.add(kScopePidReuses, {}, 0);
  double w = 1;
  for (const auto& name : workloads) {
    sink.set(kHotnessHotBytes, {name, "fast"}, w * 180 * (1 << 20) + s * (1 << 20));
    sink.set(kHotnessHotBytes, {name, "slow"}, w * 24 * (1 << 20));
    sink.set(kHotnessColdBytes, {name, "fast"}, w * 64 * (1 << 20));
    sink.set(kHotnessColdBytes, {name, "slow"}, w * 1800 * (1 << 20));
    sink.set(kWorkloadMemoryBytes, {name, "fast", "anon"}, w * 244 * (1 << 20));
    sink.set(kWorkloadMemoryBytes, {name, "fast", "file"}, w * 12 * (1 << 20));
    sink.set(kWorkloadMemoryBytes, {name, "slow", "anon"}, w * 1824 * (1 << 20));
    sink.set(kWorkloadMemoryBytes, {name, "slow", "file"}, w * 3 * (1 << 20));
    sink.set(kWorkloadMemorySource, {name, "numa_stat"}, 1);
    sink.set(kWorkloadMemorySource, {name, "numa_maps"}, 0);
    sink.add(kWorkloadMigratedBytes, {name, "promote"}, w * 64 * (1 << 20));
    sink.add(kWorkloadMigratedBytes, {name, "demote"}, w * 16 * (1 << 20));
    w += 1;
  }
  const double gib = 1024.0 * 1024 * 1024;
  sink.set(kNodeCapacity, {"0", "fast"}, 16 * gib);
  sink.set(kNodeUsed, {"0", "fast"}, 12 * gib + s * (1 << 20));
  sink.set(kNodeCapacity, {"1", "slow"}, 64 * gib);
  sink.set(kNodeUsed, {"1", "slow"}, 20 * gib);
  for (const char* node : {"0", "1"}) {
    const char* t = node[0] == '0' ? "fast" : "slow";
    sink.set(kNodeHugetlbPages, {node, t, "2M"}, 512);
    sink.set(kNodeHugetlbFreePages, {node, t, "2M"}, 128);
    sink.set(kNodeHugetlbPages, {node, t, "1G"}, 4);
    sink.set(kNodeHugetlbFreePages, {node, t, "1G"}, 1);
  }
  sink.add(kConfigReloads, {"success"}, step == 0 ? 1 : 0);
  sink.add(kConfigReloads, {"failure"}, 0);
  for (const char* cap : {"thp", "memory_tiers", "demotion", "damon_vaddr", "perf_sw_page_faults",
                          "move_pages", "kernel_migrate_offload"})
    sink.set(kKernelCapability, {cap}, 1);
  for (const char* cap : {"perf_pebs", "perf_ibs", "hmat"})
    sink.set(kKernelCapability, {cap}, 0);
  std::map<std::string, int64_t> vmstat;
  const auto& names = vmstatCounterNames();
  for (size_t i = 0; i < names.size(); ++i)
    vmstat[names[i]] = static_cast<int64_t>(1000 * i + (step + 1) * (i + 1) * 10);
  vmstat_.update(vmstat, sink);
  // A patched kernel offloading 2 MiB batches (kernel-patches/ patch 3).
  const auto n = static_cast<int64_t>(step + 1);
  offload_.update(
      {{"batches", 4 * n}, {"folios", 4 * n}, {"bytes", n * (8 << 20)}, {"fallbacks", 0}}, sink);
  sink.set(kBuildInfo, buildInfoLabels(), 1);
  sink.add(kMetricsRejectedUpdates, {"tierd_build_info"}, 0);
}

}  // namespace tierd::telemetry

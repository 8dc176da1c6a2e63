#include "telemetry/hotness/SamplingProbe.h"

#include <algorithm>

#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/SourceNames.h"
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

SamplingProbe probeSampling(const sys::SysRoot& root, DamonFs& fs, bool privileged,
                            const EventOptions& options, VaddrEvidence vaddr, bool sysAdmin) {
  SamplingProbe p;
  p.privileged = privileged;
  p.sysAdmin = sysAdmin;
  if (auto par = root.readAttr("/proc/sys/kernel/perf_event_paranoid"); par) {
    if (auto v = sys::parseI64(par.value(), "perf_event_paranoid"); v)
      p.perfEventParanoid = static_cast<int>(v.value());
  }
  auto cpu = readCpuId(root);
  if (cpu) p.cpu = cpu.value();
  auto pmus = readPmus(root);
  if (pmus) {
    p.pmus = pmus->devices;
    p.hardwarePmu = pmus->hasCpu || pmus->hasCpuCore || pmus->hasIbsOp;
  }
  // Above 2 (Debian's and Ubuntu's kernels default to 3 and 4) perf_event_open(2) refuses every
  // caller without CAP_SYS_ADMIN with EACCES before any other check (their patch to
  // kernel/events/core.c: perf_paranoid_any()); CAP_PERFMON does not satisfy it.
  const bool paranoidAny = p.perfEventParanoid > 2;
  const bool perfAllowed = paranoidAny ? sysAdmin : privileged || p.perfEventParanoid <= 0;
  const std::string perfDenied =
      paranoidAny
          ? "perf_event_paranoid is " + std::to_string(p.perfEventParanoid) +
                " (above 2: this kernel lets only CAP_SYS_ADMIN open perf events, and tierd "
                "keeps CAP_PERFMON, not CAP_SYS_ADMIN): set kernel.perf_event_paranoid = 2 "
                "(sysctl) to sample with the PMU"
          : "perf_event_paranoid is " + std::to_string(p.perfEventParanoid) +
                " and tierd lacks CAP_PERFMON: system-wide sampling needs root, CAP_PERFMON or "
                "perf_event_paranoid <= 0";

  // 1. Hardware sampling.
  SourceProbe hw;
  hw.name = sourceInfo(p.cpu.vendor == "AuthenticAMD" || p.cpu.vendor == "HygonGenuine"
                           ? SourceKind::PerfIbs
                           : SourceKind::PerfPebs)
                .name;
  if (!cpu) {
    hw.why = "cannot identify the CPU: " + cpu.error().describe();
  } else if (!pmus) {
    hw.why = "cannot read event sources: " + pmus.error().describe();
  } else if (!pmus->hasCpu && !pmus->hasCpuCore && !pmus->hasIbsOp) {
    hw.why = std::string("no PMU: no `cpu` PMU") +
             (sourceKindOf(hw.name) == SourceKind::PerfIbs ? " and no `ibs_op`" : "") +
             " in /sys/bus/event_source/devices (virtual machine without PMU passthrough?)";
  } else {
    auto events = chooseHardwareEvents(p.cpu, pmus.value(), options);
    if (!events) {
      hw.why = events.error().message;
    } else {
      for (const auto& e : events.value())
        hw.events.push_back(e.name);
      hw.available = perfAllowed;
      hw.why = perfAllowed ? events->front().why : perfDenied;
    }
  }
  p.sources.push_back(hw);

  // 2. DAMON vaddr.
  p.damon = probeDamon(fs, vaddr);
  SourceProbe damon;
  damon.name = sourceInfo(SourceKind::DamonVaddr).name;
  damon.available = p.damon.usable && privileged && p.damon.vaddr != "no";
  damon.why = !privileged && p.damon.usable ? "writing DAMON sysfs needs root" : p.damon.why;
  if (p.damon.present && p.damon.vaddr == "no") {
    const std::string lacks =
        "the kernel's DAMON lacks vaddr operations (" + p.damon.vaddrEvidence + ")";
    damon.why = p.damon.usable ? lacks : damon.why + "; besides, " + lacks;
  }
  if (damon.available)
    damon.why = (p.damon.vaddr == "yes"
                     ? "DAMON sysfs with vaddr operations (" + p.damon.vaddrEvidence + "): "
                     : "DAMON sysfs, vaddr not yet confirmed (" + p.damon.vaddrEvidence +
                           "; checked in avail_operations when tierd starts its kdamond): ") +
                p.damon.why;
  p.sources.push_back(damon);

  // 3. Software page-fault sampling.
  SourceProbe sw;
  sw.name = sourceInfo(SourceKind::PerfSoftware).name;
  sw.events.push_back(pageFaultEvent().name);
  const bool hasSoftware = pmus && std::find(pmus->devices.begin(), pmus->devices.end(),
                                             "software") != pmus->devices.end();
  if (!hasSoftware) {
    sw.why = "no `software` event source in /sys/bus/event_source/devices";
  } else if (paranoidAny ? !sysAdmin : !privileged && p.perfEventParanoid > 1) {
    sw.why = perfDenied;
  } else {
    sw.available = true;
    sw.why =
        "fallback: software page-fault sampling (PERF_COUNT_SW_PAGE_FAULTS with "
        "PERF_SAMPLE_ADDR) sees first touches and NUMA hint faults, not every access";
  }
  p.sources.push_back(sw);

  for (const auto& s : p.sources)
    if (s.available) {
      p.chosen = s.name;
      break;
    }
  return p;
}

Result<std::unique_ptr<HotnessSource>> makeSource(
    const std::string& name, const SamplingProbe& probe, const SamplingTarget& target,
    PerfEventOpener& opener, DamonFs& fs, const sys::SysRoot& root, const DamonConfig& damon,
    const PerfTuning& perf, DamonPool* damonPool) {
  if (target.cgroupPath.empty() == (target.pid == 0))
    return Error::input("give exactly one of a cgroup or a pid", "sampling target");
  const std::optional<SourceKind> kind = sourceKindOf(name);
  if (kind == SourceKind::DamonVaddr) {
    if (target.pid == 0)
      return Error::input("DAMON vaddr monitors a pid, not a cgroup", "sampling target");
    DamonConfig c = damon;
    c.pid = target.pid;
    if (damonPool)
      return std::unique_ptr<HotnessSource>(std::make_unique<DamonSource>(c, fs, *damonPool));
    return std::unique_ptr<HotnessSource>(std::make_unique<DamonSource>(c, fs));
  }
  PerfSamplerConfig c;
  c.sourceName = name;
  c.cgroupPath = target.cgroupPath;
  c.pid = target.pid;
  c.cpuBudget = perf.cpuBudget;
  if (kind == SourceKind::PerfSoftware) {
    c.events = {pageFaultEvent()};
    c.period = 1;  // every fault: faults are already rare compared to accesses
    c.sampleType =
        PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_ADDR;
  } else if (kind == SourceKind::PerfPebs || kind == SourceKind::PerfIbs) {
    auto pmus = readPmus(root);
    if (!pmus) return pmus.error();
    auto events = chooseHardwareEvents(probe.cpu, pmus.value(), {});
    if (!events) return events.error();
    c.events = events.value();
    c.period = perf.samplePeriod;
  } else {
    return Error::input("unknown source '" + name + "'", "sampling source");
  }
  return std::unique_ptr<HotnessSource>(std::make_unique<PerfSampler>(c, opener, root));
}

}  // namespace tierd::telemetry

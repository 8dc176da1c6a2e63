#include <doctest/doctest.h>

#include "FakeDamonFs.h"
#include "FakePerfEventOpener.h"
#include "TempTree.h"
#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/SamplingProbe.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

TEST_CASE("this build machine: no PMU, DAMON busy (not ours), software page faults as fallback") {
  sys::SysRoot root(std::string(TIERD_FIXTURES) + "/sampling/host-nopmu");
  SysRootDamonFs fs(root);
  auto p = probeSampling(root, fs, /*privileged=*/true);
  CHECK(p.cpu.vendor == "AuthenticAMD");
  CHECK_FALSE(p.hardwarePmu);
  REQUIRE(p.sources.size() == 3);
  CHECK(p.sources[0].name == "perf-ibs");
  CHECK_FALSE(p.sources[0].available);
  CHECK(p.sources[0].why.rfind(
            "no PMU: no `cpu` PMU and no `ibs_op` in /sys/bus/event_source/devices", 0) == 0);
  CHECK(p.sources[1].name == "damon-vaddr");
  CHECK_FALSE(p.sources[1].available);
  CHECK(p.sources[1].why.rfind("DAMON busy: kdamond 0 is not ours (state on, operations paddr",
                               0) == 0);
  CHECK(p.sources[2].name == "perf-sw-page-faults");
  CHECK(p.sources[2].available);
  CHECK(p.sources[2].events == std::vector<std::string>{"software/page-faults"});
  CHECK(p.chosen == "perf-sw-page-faults");
}

TEST_CASE("unprivileged with paranoid 2: every perf source says why not") {
  sys::SysRoot root(std::string(TIERD_FIXTURES) + "/sampling/host-nopmu");
  SysRootDamonFs fs(root);
  auto p = probeSampling(root, fs, /*privileged=*/false);
  CHECK_FALSE(p.sources[2].available);
  CHECK(p.sources[2].why.find("perf_event_paranoid is 2") != std::string::npos);
  CHECK(p.chosen.empty());
}

TEST_CASE("a Sapphire Rapids host with free DAMON prefers PEBS and names its events") {
  TempTree t;
  t.file("/proc/cpuinfo",
         "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\n");
  t.file("/proc/sys/kernel/perf_event_paranoid", "2\n");
  t.file("/sys/bus/event_source/devices/cpu/type", "4\n");
  t.file("/sys/bus/event_source/devices/software/type", "1\n");
  t.file("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0\n");
  sys::SysRoot root(t.dir());
  SysRootDamonFs fs(root);
  auto p = probeSampling(root, fs, true);
  CHECK(p.hardwarePmu);
  CHECK(p.sources[0].name == "perf-pebs");
  CHECK(p.sources[0].available);
  CHECK(p.sources[0].events.at(0) == "spr::MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64:precise=2");
  CHECK(p.sources[1].available);
  CHECK(p.chosen == "perf-pebs");
}

// kernel/events/core.c of Debian's 7.3 (and Ubuntu's): perf_event_open() returns EACCES when
// perf_event_paranoid > 2 and the caller lacks CAP_SYS_ADMIN, before any other check.
TEST_CASE("above paranoid 2 the perf sources need CAP_SYS_ADMIN, which the daemon drops") {
  TempTree t;
  t.file("/proc/cpuinfo",
         "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\n");
  t.file("/proc/sys/kernel/perf_event_paranoid", "3\n");
  t.file("/sys/bus/event_source/devices/cpu/type", "4\n");
  t.file("/sys/bus/event_source/devices/software/type", "1\n");
  t.file("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0\n");
  sys::SysRoot root(t.dir());
  SysRootDamonFs fs(root);
  const SamplingProbe daemon = probeSampling(root, fs, true, {}, VaddrEvidence::Skip, false);
  CHECK_FALSE(daemon.sources[0].available);
  CHECK(daemon.sources[0].why.find("kernel.perf_event_paranoid = 2") != std::string::npos);
  CHECK_FALSE(daemon.sources[2].available);
  CHECK(daemon.chosen == "damon-vaddr");
  const SamplingProbe admin = probeSampling(root, fs, true, {}, VaddrEvidence::Skip, true);
  CHECK(admin.chosen == "perf-pebs");
}

TEST_CASE("makeSource gives the perf sources the configured sample period and CPU budget") {
  TempTree t;
  t.file("/proc/cpuinfo",
         "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\n");
  t.file("/proc/sys/kernel/perf_event_paranoid", "2\n");
  t.file("/sys/bus/event_source/devices/cpu/type", "4\n");
  t.file("/sys/bus/event_source/devices/software/type", "1\n");
  t.file("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0\n");
  sys::SysRoot root(t.dir());
  SysRootDamonFs fs(root);
  FakePerfEventOpener opener;
  const SamplingProbe p = probeSampling(root, fs, true);
  PerfTuning tuning;
  tuning.samplePeriod = 4093;
  tuning.cpuBudget = 0.025;
  SamplingTarget cgroup;
  cgroup.cgroupPath = t.dir() + "/sys/fs/cgroup/w";
  auto pebs = makeSource("perf-pebs", p, cgroup, opener, fs, root, {}, tuning);
  REQUIRE(pebs.ok());
  auto* sampler = dynamic_cast<PerfSampler*>(pebs.value().get());
  REQUIRE(sampler);
  CHECK(sampler->period() == 4093);
  CHECK(sampler->config().cpuBudget == doctest::Approx(0.025));
  // Software page faults sample every fault whatever the period; the budget still applies.
  SamplingTarget pid;
  pid.pid = 4242;
  auto sw = makeSource("perf-sw-page-faults", p, pid, opener, fs, root, {}, tuning);
  REQUIRE(sw.ok());
  auto* swSampler = dynamic_cast<PerfSampler*>(sw.value().get());
  REQUIRE(swSampler);
  CHECK(swSampler->period() == 1);
  CHECK(swSampler->config().cpuBudget == doctest::Approx(0.025));
  // Defaults: what PerfSamplerConfig always had (10007 events, 1% of a core).
  auto dflt = makeSource("perf-pebs", p, cgroup, opener, fs, root);
  REQUIRE(dflt.ok());
  CHECK(dynamic_cast<PerfSampler*>(dflt.value().get())->period() == 10007);
}

TEST_CASE(
    "the daemon's probe (VaddrEvidence::Skip) leaves /proc/kallsyms unread: DAMON usable, "
    "vaddr confirmed when its kdamond starts") {
  TempTree t;
  t.file("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n\n");
  t.file("/proc/sys/kernel/perf_event_paranoid", "2\n");
  t.file("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds", "0\n");
  t.file("/proc/kallsyms", "ffffffff81234560 t damon_va_check_accesses\n");
  sys::SysRoot root(t.dir());
  SysRootDamonFs fs(root);
  const SamplingProbe read = probeSampling(root, fs, true);  // tierctl sampling: read
  CHECK(read.damon.vaddr == "yes");
  CHECK(read.damon.vaddrEvidence.find("/proc/kallsyms has damon_va_check_accesses") == 0);
  const SamplingProbe p = probeSampling(root, fs, true, {}, VaddrEvidence::Skip);
  CHECK(p.damon.vaddr == "unknown");
  CHECK(p.damon.vaddrEvidence == "not looked for (no kdamond to read avail_operations from)");
  REQUIRE(p.sources.size() >= 2);
  CHECK(p.sources[1].name == "damon-vaddr");
  CHECK(p.sources[1].available);
  CHECK(p.sources[1].why.rfind("DAMON sysfs, vaddr not yet confirmed", 0) == 0);
  CHECK(p.chosen == "damon-vaddr");
}

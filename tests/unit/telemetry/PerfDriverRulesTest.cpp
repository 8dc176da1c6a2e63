// PerfSampler against fakes that answer perf_event_open as Linux 7.3's x86 drivers do:
// - arch/x86/events/amd/ibs.c, perf_ibs_init(): EINVAL for exclude_kernel/exclude_user/exclude_hv
//   unless config2 has the swfilt bit (IBS_SW_FILTER_MASK, format "config2:0"), and EINVAL for a
//   sample period with any of its low 4 bits set; perf_ibs_check_period() refuses the same
//   periods through PERF_EVENT_IOC_PERIOD.
// - arch/x86/events/intel/core.c, intel_pmu_hw_config(): on PMUs with PMU_FL_MEM_LOADS_AUX
//   (Sapphire Rapids, Granite Rapids, hybrid P-cores), a load-latency event (event 0xcd, umask
//   0x01) sampling PERF_SAMPLE_DATA_SRC fails with ENODATA unless its group leader, or a sibling,
//   is mem-loads-aux (event 0x03, umask 0x82).
// - kernel/events/core.c: EINVAL says nothing about which attr field was refused; in
//   perf_event_open(), after the PMU's event_init, a group member gets EINVAL unless its leader
//   uses the same clock (use_clockid and clockid), the same CPU and the same context (task).

#include <doctest/doctest.h>

#include <algorithm>

#include "FakePerfEventOpener.h"
#include "TempTree.h"
#include "telemetry/hotness/PerfSampler.h"
#include "telemetry/hotness/PmuEvents.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {

constexpr uint32_t kIbsOpType = 11;
const std::string kDevices = "/sys/bus/event_source/devices";

void fillTree(const TempTree& t) {
  t.file("/sys/devices/system/cpu/online", "0-1\n");
  t.mkdir("/sys/fs/cgroup/perf_event/work");
  t.file("/proc/100/maps", "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n");
}

/// An ibs_op PMU in sysfs as the 7.3 driver shows it on Zen 4, with or without swfilt.
void ibsPmu(const TempTree& t, bool swfilt) {
  t.file(kDevices + "/cpu/type", "4\n");
  t.file(kDevices + "/ibs_op/type", std::to_string(kIbsOpType) + "\n");
  t.file(kDevices + "/ibs_op/format/cnt_ctl", "config:19\n");
  t.file(kDevices + "/ibs_op/format/l3missonly", "config:16\n");
  if (swfilt) t.file(kDevices + "/ibs_op/format/swfilt", "config2:0\n");
}

/// perf_ibs_init()'s refusals (the ones tierd's attr can reach).
int ibsInit(const FakePerfEventOpener::Open& o, const std::vector<FakePerfEventOpener::Open>&) {
  if (o.attr.type != kIbsOpType) return ENOENT;
  if (o.attr.exclude_host || o.attr.exclude_guest || o.attr.exclude_idle) return EINVAL;
  if (!(o.attr.config2 & 1) && (o.attr.exclude_kernel || o.attr.exclude_user || o.attr.exclude_hv))
    return EINVAL;
  if (!o.attr.freq && (o.attr.sample_period & 0x0f)) return EINVAL;
  return 0;
}

/// perf_ibs_check_period(): low nibble clear and at least perf_ibs_op.min_period (0x90).
int ibsCheckPeriod(const perf_event_attr& attr, uint64_t period) {
  if (attr.freq) return 0;
  return (period & 0x0f) || period < 0x90 ? EINVAL : 0;
}

PerfSamplerConfig ibsConfig(const TempTree& t, uint64_t period) {
  auto pmus = readPmus(sys::SysRoot(t.dir()));
  REQUIRE(pmus.ok());
  auto events = chooseHardwareEvents({"AuthenticAMD", 0x19, 0x11}, pmus.value(), {});
  REQUIRE(events.ok());
  PerfSamplerConfig c;
  c.sourceName = "perf-ibs";
  c.events = events.value();
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  c.period = period;
  return c;
}

bool isAux(const perf_event_attr& a) {
  return (a.config & 0xffff) == 0x8203;
}

/// intel_pmu_hw_config()'s mem-loads-aux rule on a PMU_FL_MEM_LOADS_AUX part.
int sprHwConfig(const FakePerfEventOpener::Open& o,
                const std::vector<FakePerfEventOpener::Open>& opened) {
  if (!(o.attr.sample_type & PERF_SAMPLE_DATA_SRC) || !isLoadLatency(o.attr)) return 0;
  if (o.groupFd < 0) return ENODATA;  // the event is its own leader: no aux before it
  const auto& leader = opened.at(static_cast<size_t>(o.groupFd - 1000));
  return isAux(leader.attr) ? 0 : ENODATA;
}

/// perf_event_open()'s group checks (kernel/events/core.c), after the PMU's event_init: "All
/// events in a group should have the same clock", the same CPU, the same context.
int perfCoreGroupRules(const FakePerfEventOpener::Open& o,
                       const std::vector<FakePerfEventOpener::Open>& opened) {
  if (o.groupFd < 0) return 0;
  const auto& leader = opened.at(static_cast<size_t>(o.groupFd - 1000));
  const bool sameClock = leader.attr.use_clockid == o.attr.use_clockid &&
                         (!o.attr.use_clockid || leader.attr.clockid == o.attr.clockid);
  if (!sameClock || leader.cpu != o.cpu || leader.pid != o.pid) return EINVAL;
  return 0;
}

/// A Sapphire Rapids part as the kernel answers it: the driver's event_init, then the core's
/// group checks.
int sprOpen(const FakePerfEventOpener::Open& o,
            const std::vector<FakePerfEventOpener::Open>& opened) {
  if (int err = sprHwConfig(o, opened); err != 0) return err;
  return perfCoreGroupRules(o, opened);
}

/// A Zen host's fixture tree with `ibs_op` (with or without the swfilt format bit) and a fake
/// opener that answers as perf_ibs_init() and perf_ibs_check_period() do.
struct IbsHost {
  TempTree t;
  FakePerfEventOpener opener;
  explicit IbsHost(bool swfilt) {
    fillTree(t);
    ibsPmu(t, swfilt);
    opener.driver = ibsInit;
    opener.checkPeriod = ibsCheckPeriod;
  }
  sys::SysRoot root() const { return sys::SysRoot(t.dir()); }
};

/// A Sapphire Rapids `cpu` PMU in sysfs: its format/ and, where PMU_FL_MEM_LOADS_AUX is set,
/// events/mem-loads-aux (mem_is_visible()).
void sprPmu(const TempTree& t, bool withAux) {
  t.file(kDevices + "/cpu/type", "4\n");
  t.file(kDevices + "/cpu/format/event", "config:0-7\n");
  t.file(kDevices + "/cpu/format/umask", "config:8-15\n");
  t.file(kDevices + "/cpu/format/ldlat", "config1:0-15\n");
  t.file(kDevices + "/cpu/caps/max_precise", "3\n");
  if (withAux) t.file(kDevices + "/cpu/events/mem-loads-aux", "event=0x03,umask=0x82\n");
}

}  // namespace

TEST_CASE("IBS with swfilt: the driver drops kernel samples, the period is a multiple of 16") {
  IbsHost h(true);
  auto& opener = h.opener;
  PerfSampler s(ibsConfig(h.t, 10007), opener, h.root());
  auto started = s.start();
  INFO((started.ok() ? std::string() : started.error().describe()));
  REQUIRE(started.ok());
  REQUIRE(opener.opens.size() == 2);
  for (const auto& o : opener.opens) {
    CHECK(o.attr.type == kIbsOpType);
    CHECK(o.attr.config2 == 1);  // swfilt
    CHECK(unsigned(o.attr.exclude_kernel) == 1);
    CHECK(o.attr.sample_period == 10000);               // 10007 with its low 4 bits cleared
    CHECK(o.attr.sample_type == kPreferredSampleType);  // nothing dropped to get it open
  }
  CHECK(s.period() == 10000);
  CHECK(s.refusedSampleFields().empty());
}

TEST_CASE("IBS without swfilt: excludes stay clear and kernel-mode samples are dropped here") {
  IbsHost h(false);
  auto& opener = h.opener;
  PerfSampler s(ibsConfig(h.t, 4099), opener, h.root());
  auto started = s.start();
  INFO((started.ok() ? std::string() : started.error().describe()));
  REQUIRE(started.ok());
  const auto& attr = opener.opens.at(0).attr;
  CHECK(attr.config2 == 0);
  CHECK(unsigned(attr.exclude_kernel) == 0);
  CHECK(unsigned(attr.exclude_hv) == 0);
  CHECK(attr.sample_period == 4096);

  SampleFields f;
  f.pid = 100;
  f.tid = 100;
  f.time = 5;
  f.addr = 0x7f0000001000;
  opener.rings[0]->write(sampleRecord(s.sampleType(), f));  // user mode
  f.misc = PERF_RECORD_MISC_KERNEL;
  f.addr = 0x7f0000002000;  // a kernel access on the workload's behalf (copy_to_user)
  opener.rings[0]->write(sampleRecord(s.sampleType(), f));
  f.misc = PERF_RECORD_MISC_HYPERVISOR;
  opener.rings[1]->write(sampleRecord(s.sampleType(), f));
  auto batch = s.drain(10);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 1);
  CHECK(batch->at(0).vaddr == 0x7f0000001000);
  CHECK(s.stats().discarded == 2);
}

// IBS op sampling tags every op; perf_ibs_get_mem_lvl() (arch/x86/events/amd/ibs.c) says where a
// load or store was served. A cache hit is no memory access: dropped, as is a stack in L1.
TEST_CASE("IBS samples a cache served are dropped, memory, CXL and unknown sources kept") {
  IbsHost h(true);
  auto& opener = h.opener;
  PerfSampler s(ibsConfig(h.t, 10007), opener, h.root());
  REQUIRE(s.start().ok());
  auto src = [](unsigned lvlNum, uint64_t lvl) {
    perf_mem_data_src d{};
    d.mem_op = PERF_MEM_OP_LOAD;
    d.mem_lvl_num = lvlNum;
    d.mem_lvl = lvl;
    return d.val;
  };
  SampleFields f;
  f.pid = 100;
  f.tid = 100;
  f.time = 5;
  const std::pair<uint64_t, uint64_t> samples[] = {
      {0x7f0000001000, src(PERF_MEM_LVLNUM_L1, PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT)},
      {0x7f0000002000, src(PERF_MEM_LVLNUM_L3, PERF_MEM_LVL_L3 | PERF_MEM_LVL_HIT)},
      {0x7f0000003000, src(0, PERF_MEM_LVL_L2 | PERF_MEM_LVL_HIT)},  // older drivers' field only
      {0x7f0000004000, src(PERF_MEM_LVLNUM_RAM, PERF_MEM_LVL_LOC_RAM | PERF_MEM_LVL_HIT)},
      {0x7f0000005000, src(PERF_MEM_LVLNUM_CXL, PERF_MEM_LVL_NA)},
      {0x7f0000006000, 0},  // no data source
  };
  for (const auto& [addr, dataSrc] : samples) {
    f.addr = addr;
    f.dataSrc = dataSrc;
    opener.rings[0]->write(sampleRecord(s.sampleType(), f));
  }
  auto batch = s.drain(10);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 3);
  CHECK(batch->at(0).vaddr == 0x7f0000004000);
  CHECK(batch->at(1).vaddr == 0x7f0000005000);
  CHECK(batch->at(2).vaddr == 0x7f0000006000);
  CHECK(s.stats().discarded == 3);
}

// perf_ibs_check_period() refuses a period under perf_ibs_op.min_period (0x90) with EINVAL: a
// period halved under the budget must stop there, or every later change is refused.
TEST_CASE("IBS: the period never adapts below the driver's minimum of 0x90") {
  IbsHost h(true);
  PerfSamplerConfig c = ibsConfig(h.t, 10007);
  PerfSampler s(c, h.opener, h.root());
  CHECK(s.config().minPeriod == 0x90);
  CHECK(adaptPeriod(0xa0, 0.0, 0.01, s.config().minPeriod, s.config().maxPeriod) == 0x90);
  c.period = 100;  // asked for less than the driver takes: started at the minimum
  PerfSampler low(c, h.opener, h.root());
  CHECK(low.period() == 0x90);
}

TEST_CASE("IBS: an adapted period keeps its low 4 bits clear, so PERF_EVENT_IOC_PERIOD takes it") {
  CHECK(alignPeriod(10007, 16) == 10000);
  CHECK(alignPeriod(5, 16) == 16);  // never below the multiple
  CHECK(alignPeriod(10007, 1) == 10007);
  IbsHost h(true);
  auto& opener = h.opener;
  auto c = ibsConfig(h.t, 583);  // aligned down to 576 (0x240)
  c.minPeriod = 1;    // a bound under the driver's minimum is raised to 0x90, a multiple of 16
  c.cpuBudget = 1e9;  // far under budget: the period halves at each adaptation
  PerfSampler s(c, opener, h.root());
  REQUIRE(s.start().ok());
  CHECK(s.config().minPeriod == 0x90);
  REQUIRE(s.period() == 576);
  // Adaptation runs once a second of wall time has passed since start.
  for (int i = 0; i < 30 && s.period() == 576; ++i) {
    REQUIRE(s.drain(0).ok());
    if (s.period() == 576) ::usleep(100000);
  }
  REQUIRE(s.period() == 288);
  CHECK(s.period() % 16 == 0);
  CHECK(std::none_of(opener.log.begin(), opener.log.end(),
                     [](const std::string& l) { return l.rfind("period errno", 0) == 0; }));
  CHECK(std::count_if(opener.log.begin(), opener.log.end(), [](const std::string& l) {
          return l.rfind("period ", 0) == 0;
        }) == 2);  // both CPUs' events got the new period
}

TEST_CASE("Sapphire Rapids: load latency opens in a group led by mem-loads-aux") {
  TempTree t;
  fillTree(t);
  sprPmu(t, true);
  auto pmus = readPmus(sys::SysRoot(t.dir()));
  REQUIRE(pmus.ok());
  CHECK(pmus->memLoadsAux == "event=0x03,umask=0x82");
  auto events = chooseHardwareEvents({"GenuineIntel", 6, 0x8f}, pmus.value(), {});
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  REQUIRE(events->at(0).groupLeader.has_value());
  CHECK(events->at(0).groupLeader->config == 0x8203);
  CHECK(events->at(0).groupLeader->type == PERF_TYPE_RAW);
  CHECK_FALSE(events->at(1).groupLeader.has_value());  // stores need no aux

  FakePerfEventOpener opener;
  opener.driver = sprOpen;
  PerfSamplerConfig c;
  c.sourceName = "perf-pebs";
  c.events = events.value();
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  auto started = s.start();
  INFO((started.ok() ? std::string() : started.error().describe()));
  REQUIRE(started.ok());
  // Per CPU: the aux leader (counting, disabled), then load latency in its group; then stores.
  REQUIRE(opener.opens.size() == 6);
  for (int cpu = 0; cpu < 2; ++cpu) {
    const auto& leader = opener.opens.at(2 * static_cast<size_t>(cpu));
    const auto& member = opener.opens.at(2 * static_cast<size_t>(cpu) + 1);
    CHECK(isAux(leader.attr));
    CHECK(leader.attr.sample_period == 0);
    CHECK(leader.groupFd == -1);
    CHECK(leader.cpu == cpu);
    CHECK(isLoadLatency(member.attr));
    CHECK(member.groupFd == 1000 + 2 * cpu);
    CHECK((member.attr.sample_type & PERF_SAMPLE_DATA_SRC) != 0);
    // The leader on the member's clock and privilege filter (the core refuses another clock).
    CHECK(leader.attr.use_clockid == 1);
    CHECK(leader.attr.clockid == CLOCK_MONOTONIC);
    CHECK(leader.attr.exclude_kernel == member.attr.exclude_kernel);
    CHECK(leader.attr.exclude_hv == member.attr.exclude_hv);
  }
  CHECK(s.fdCount() == 6);
  CHECK(s.state() == "period=10007 overhead=0.0% leader=mem-loads-aux");
  // The leader is enabled after its member, so the group starts whole.
  const auto& log = opener.log;
  auto at = [&](const std::string& op) {
    return std::find(log.begin(), log.end(), op) - log.begin();
  };
  CHECK(at("enable 1001") < at("enable 1000"));
  s.stop();
  CHECK(std::count(log.begin(), log.end(), "close 1000") == 1);  // leaders closed too
  CHECK(at("close 1001") < at("close 1000"));
}

TEST_CASE("Sapphire Rapids without mem-loads-aux in sysfs: ENODATA is explained, not misread") {
  TempTree t;
  fillTree(t);
  sprPmu(t, false);
  auto pmus = readPmus(sys::SysRoot(t.dir()));
  REQUIRE(pmus.ok());
  auto events = chooseHardwareEvents({"GenuineIntel", 6, 0x8f}, pmus.value(), {});
  REQUIRE(events.ok());
  CHECK_FALSE(events->at(0).groupLeader.has_value());
  FakePerfEventOpener opener;
  opener.driver = sprOpen;
  PerfSamplerConfig c;
  c.events = events.value();
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  auto started = s.start();
  REQUIRE_FALSE(started.ok());
  CHECK(started.error().code == ENODATA);
  CHECK(started.error().message.find("mem-loads-aux") != std::string::npos);
  CHECK(s.fdCount() == 0);
}

TEST_CASE("an EINVAL that no optional sample field explains names the attr, not sample_type") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  // A PMU that refuses precise_ip 3 (max_precise 2): nothing about sample_type.
  opener.driver = [](const FakePerfEventOpener::Open& o, const auto&) {
    return o.attr.precise_ip > 2 ? EINVAL : 0;
  };
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_RAW;
  attr.config = 0x20d1;
  attr.precise_ip = 3;
  PerfSamplerConfig c;
  c.events = {EventChoice{"skx::MEM_LOAD_RETIRED:L3_MISS:precise=3", attr, "test"}};
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  c.period = 1009;
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  auto started = s.start();
  REQUIRE_FALSE(started.ok());
  const std::string m = started.error().describe();
  INFO(m);
  CHECK(started.error().code == EINVAL);
  CHECK(m.find("also without PHYS_ADDR, WEIGHT_STRUCT") != std::string::npos);
  CHECK(m.find("precise_ip=3") != std::string::npos);
  CHECK(m.find("config=0x20d1") != std::string::npos);
  CHECK(m.find("MEM_LOAD_RETIRED") != std::string::npos);
  CHECK(s.sampleType() == kPreferredSampleType);  // not left stripped by a refusal elsewhere
  CHECK(s.refusedSampleFields().empty());
}

TEST_CASE("a refused optional sample field is named once the event opens without it") {
  TempTree t;
  fillTree(t);
  FakePerfEventOpener opener;
  opener.refuseSampleTypeBits = PERF_SAMPLE_PHYS_ADDR;
  PerfSamplerConfig c;
  c.events = {pageFaultEvent()};
  c.cgroupPath = "/sys/fs/cgroup/perf_event/work";
  PerfSampler s(c, opener, sys::SysRoot(t.dir()));
  REQUIRE(s.start().ok());
  CHECK(s.refusedSampleFields() == std::vector<std::string>{"PHYS_ADDR"});
  CHECK(s.state() == "period=10007 overhead=0.0% dropped=PHYS_ADDR");
  CHECK((s.sampleType() & PERF_SAMPLE_WEIGHT_STRUCT) != 0);  // kept: it was not the problem
}

TEST_CASE("explainRefusal names the IBS rule an attr breaks") {
  EventChoice ibs{"ibs_op", {}, "test"};
  ibs.periodMultiple = 16;
  ibs.filterKernelInUser = true;
  perf_event_attr a{};
  a.sample_period = 10007;
  a.exclude_kernel = 1;
  const std::string m = explainRefusal(ibs, a);
  CHECK(m.find("not a multiple of 16") != std::string::npos);
  CHECK(m.find("without the PMU's swfilt") != std::string::npos);
}

TEST_CASE("sysfs event strings encode through the PMU's format fields") {
  std::map<std::string, std::string> fmt{{"event", "config:0-7"},
                                         {"umask", "config:8-15"},
                                         {"ldlat", "config1:0-15"},
                                         {"edge", "config:18"}};
  auto a = encodeSysfsEvent(4, "event=0x03,umask=0x82", fmt, "x");
  REQUIRE(a.ok());
  CHECK(a->config == 0x8203);
  CHECK(a->type == 4);
  auto b = encodeSysfsEvent(4, "event=0xcd,umask=0x1,ldlat=3,edge", fmt, "x");
  REQUIRE(b.ok());
  CHECK(b->config == (0x1cd | (1u << 18)));
  CHECK(b->config1 == 3);
  CHECK_FALSE(encodeSysfsEvent(4, "event=0x100", fmt, "x").ok());  // wider than config:0-7
  CHECK_FALSE(encodeSysfsEvent(4, "nosuch=1", fmt, "x").ok());
  CHECK_FALSE(encodeSysfsEvent(4, "event=zz", fmt, "x").ok());
}

// Encoding tests: libpfm4 encodes events of PMUs this machine lacks when LIBPFM_ENCODE_INACTIVE=1
// is set before pfm_initialize (done below, before main). We check the perf_event_attr fields
// the kernel will get. Expected values: libpfm4's event tables (lib/events/intel_spr_events.h)
// and the Intel SDM event tables.

#include <doctest/doctest.h>

#include <cstdlib>

#include "TempTree.h"
#include "telemetry/hotness/PmuEvents.h"

using namespace tierd;
using namespace tierd::telemetry;
using namespace tierd::telemetry::testing;

namespace {
const int kEncodeInactive = ::setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);

PmuInventory intelCpu() {
  PmuInventory p;
  p.devices = {"cpu", "software"};
  p.hasCpu = true;
  return p;
}
}  // namespace

TEST_CASE("two Sapphire Rapids encodings") {
  REQUIRE(kEncodeInactive == 0);
  auto l3 = encodePfmEvent("spr::MEM_LOAD_RETIRED:L3_MISS:precise=3");
  REQUIRE(l3.ok());
  CHECK(l3->type == PERF_TYPE_RAW);
  CHECK(l3->config == 0x20d1);
  CHECK(unsigned(l3->precise_ip) == 3);
  CHECK(unsigned(l3->exclude_kernel) == 1);  // user level only (PFM_PLM3)
  auto ll = encodePfmEvent("spr::MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64");
  REQUIRE(ll.ok());
  CHECK(ll->config == 0x1cd);
  CHECK(ll->config1 == 64);  // the ldlat threshold goes to config1
}

TEST_CASE("an unknown event is an Unsupported error naming it") {
  auto e = encodePfmEvent("spr::NO_SUCH_EVENT");
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().kind == ErrorKind::Unsupported);
  CHECK(e.error().context == "spr::NO_SUCH_EVENT");
}

TEST_CASE("Intel server models get load latency plus stores, encoded for their PMU") {
  struct Case {
    int model;
    const char* pmu;
  };
  for (Case c : {Case{0x8f, "spr"}, Case{0x6a, "icx"}, Case{0x55, "skx"}}) {
    CAPTURE(c.pmu);
    CHECK(intelPfmPmu(6, c.model) == c.pmu);
    auto ev = chooseHardwareEvents({"GenuineIntel", 6, c.model}, intelCpu(), {});
    REQUIRE(ev.ok());
    REQUIRE(ev->size() == 2);
    CHECK(ev->at(0).name ==
          std::string(c.pmu) + "::MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64:precise=2");
    CHECK(ev->at(0).attr.type == PERF_TYPE_RAW);
    CHECK(ev->at(0).attr.config == 0x1cd);
    CHECK(ev->at(0).attr.config1 == 64);
    CHECK(unsigned(ev->at(0).attr.precise_ip) == 2);
    CHECK(ev->at(1).name == std::string(c.pmu) + "::MEM_INST_RETIRED:ALL_STORES:precise=3");
    CHECK(ev->at(1).attr.config == 0x82d0);
    CHECK(unsigned(ev->at(1).attr.precise_ip) == 3);

    EventOptions l3;
    l3.intelMode = IntelMode::L3Miss;
    l3.stores = false;
    auto miss = chooseHardwareEvents({"GenuineIntel", 6, c.model}, intelCpu(), l3);
    REQUIRE(miss.ok());
    REQUIRE(miss->size() == 1);
    CHECK(miss->at(0).attr.config == 0x20d1);
    CHECK(unsigned(miss->at(0).attr.precise_ip) == 3);
  }
}

TEST_CASE("the ldlat threshold is configurable and lands in config1") {
  EventOptions o;
  o.ldlatCycles = 128;
  o.stores = false;
  auto ev = chooseHardwareEvents({"GenuineIntel", 6, 0x8f}, intelCpu(), o);
  REQUIRE(ev.ok());
  CHECK(ev->at(0).attr.config1 == 128);
}

TEST_CASE("hybrid parts open on the cpu_core PMU type") {
  PmuInventory p;
  p.devices = {"cpu_atom", "cpu_core", "software"};
  p.hasCpuCore = true;
  p.cpuCoreType = 8;
  auto ev = chooseHardwareEvents({"GenuineIntel", 6, 0x97}, p, {});
  REQUIRE(ev.ok());
  CHECK(ev->at(0).attr.type == 8);
  CHECK(ev->at(0).attr.config == 0x1cd);
  CHECK(ev->at(0).why.find("cpu_core") != std::string::npos);
}

TEST_CASE("no cpu PMU: the reason says so") {
  PmuInventory p;
  p.devices = {"breakpoint", "software"};
  auto ev = chooseHardwareEvents({"GenuineIntel", 6, 0x8f}, p, {});
  REQUIRE_FALSE(ev.ok());
  CHECK(ev.error().message.find("no `cpu` PMU") != std::string::npos);
  auto unknown = chooseHardwareEvents({"GenuineIntel", 6, 0x01}, intelCpu(), {});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("model 1") != std::string::npos);
}

TEST_CASE("Zen 4: libpfm4 knows the core PMU, IBS op comes from ibs_op sysfs") {
  auto ld = encodePfmEvent("amd64_fam19h_zen4::LS_DISPATCH:LD_DISPATCH");
  REQUIRE(ld.ok());
  CHECK(ld->type == PERF_TYPE_RAW);
  CHECK(ld->config == 0x129);

  TempTree t;
  const std::string d = "/sys/bus/event_source/devices";
  t.file(d + "/cpu/type", "4\n");
  t.file(d + "/software/type", "1\n");
  t.file(d + "/ibs_op/type", "11\n");
  t.file(d + "/ibs_op/format/cnt_ctl", "config:19\n");
  t.file(d + "/ibs_op/format/l3missonly", "config:16\n");
  t.file(d + "/ibs_op/format/swfilt", "config2:0\n");
  auto inv = readPmus(sys::SysRoot(t.dir()));
  REQUIRE(inv.ok());
  CHECK(inv->hasIbsOp);
  CHECK(inv->ibsOpType == 11);
  // Zen 4 offers l3missonly: used by default (only ops memory served are tagged)
  auto ev = chooseHardwareEvents({"AuthenticAMD", 0x19, 0x11}, inv.value(), {});
  REQUIRE(ev.ok());
  REQUIRE(ev->size() == 1);
  CHECK(ev->at(0).attr.type == 11);
  CHECK(ev->at(0).attr.config == ((uint64_t{1} << 19) | (uint64_t{1} << 16)));
  EventOptions all;
  all.ibsL3MissOnly = false;
  auto every = chooseHardwareEvents({"AuthenticAMD", 0x19, 0x11}, inv.value(), all);
  REQUIRE(every.ok());
  CHECK(every->at(0).attr.config == (uint64_t{1} << 19));
  // Zen 3 (no l3missonly in format/): every op, and no error
  PmuInventory zen3Inv = inv.value();
  zen3Inv.ibsOpFormat.erase("l3missonly");
  auto zen3 = chooseHardwareEvents({"AuthenticAMD", 0x19, 0x01}, zen3Inv, {});
  REQUIRE(zen3.ok());
  CHECK(zen3->at(0).attr.config == (uint64_t{1} << 19));

  PmuInventory none;
  none.devices = {"software"};
  auto noIbs = chooseHardwareEvents({"AuthenticAMD", 0x19, 0x11}, none, {});
  REQUIRE_FALSE(noIbs.ok());
  CHECK(noIbs.error().message.find("no ibs_op PMU") != std::string::npos);
}

TEST_CASE("PMU format fields parse strictly") {
  auto f = parseFormatField("config:0-15", "x");
  REQUIRE(f.ok());
  CHECK(f->word == 0);
  CHECK(f->lo == 0);
  CHECK(f->hi == 15);
  CHECK(parseFormatField("config1:3", "x")->word == 1);
  CHECK_FALSE(parseFormatField("cfg:3", "x").ok());
  CHECK_FALSE(parseFormatField("config:9-3", "x").ok());
  CHECK_FALSE(parseFormatField("config:64", "x").ok());
}

TEST_CASE("readCpuId takes the first processor block") {
  TempTree t;
  t.file("/proc/cpuinfo",
         "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
         "model name\t: Intel(R) Xeon(R)\n\nprocessor\t: 1\nvendor_id\t: Other\n");
  auto id = readCpuId(sys::SysRoot(t.dir()));
  REQUIRE(id.ok());
  CHECK(id->vendor == "GenuineIntel");
  CHECK(id->family == 6);
  CHECK(id->model == 0x8f);
}

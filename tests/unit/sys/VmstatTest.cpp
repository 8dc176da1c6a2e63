#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "telemetry/metrics/MetricsSink.h"
#include "tierd/sys/Vmstat.h"

using namespace tierd;

namespace {
// A SysRoot tree holding one proc/vmstat file with the kernel's format.
struct VmstatTree {
  std::string root;
  explicit VmstatTree(const std::string& content) {
    char name[] = "/tmp/tierd-vmstat-XXXXXX";
    REQUIRE(::mkdtemp(name));
    root = name;
    REQUIRE(::mkdir((root + "/proc").c_str(), 0755) == 0);
    write(content);
  }
  void write(const std::string& content) {
    FILE* f = std::fopen((root + "/proc/vmstat").c_str(), "w");
    REQUIRE(f);
    std::fputs(content.c_str(), f);
    std::fclose(f);
  }
  ~VmstatTree() {
    ::unlink((root + "/proc/vmstat").c_str());
    ::rmdir((root + "/proc").c_str());
    ::rmdir(root.c_str());
  }
};
}  // namespace

TEST_CASE("readVmstat feeds VmstatDeltas: kernel migration counters as deltas") {
  VmstatTree t(
      "nr_free_pages 123\npgpromote_success 10\npgpromote_candidate 40\npgdemote_kswapd 7\n"
      "pgmigrate_success 100\npgmigrate_fail 2\nthp_migration_success 1\n");
  sys::SysRoot root(t.root);
  telemetry::RecordingSink sink;
  telemetry::VmstatDeltas deltas;
  auto first = sys::readVmstat(root);
  REQUIRE(first.ok());
  CHECK(first->at("nr_free_pages") == 123);
  deltas.update(first.value(), sink);
  t.write(
      "nr_free_pages 99\npgpromote_success 522\npgpromote_candidate 40\npgdemote_kswapd 9\n"
      "pgmigrate_success 612\npgmigrate_fail 2\nthp_migration_success 2\n");
  auto second = sys::readVmstat(root);
  REQUIRE(second.ok());
  deltas.update(second.value(), sink);
  CHECK(sink.value("tierd_kernel_vmstat_events_total", {"pgpromote_success"}) == 512);
  CHECK(sink.value("tierd_kernel_vmstat_events_total", {"pgmigrate_success"}) == 512);
  CHECK(sink.value("tierd_kernel_vmstat_events_total", {"pgdemote_kswapd"}) == 2);
  CHECK(sink.value("tierd_kernel_vmstat_events_total", {"thp_migration_success"}) == 1);
  CHECK(sink.value("tierd_kernel_vmstat_events_total", {"pgmigrate_fail"}) == 0);
  CHECK(sink.seriesCount("tierd_kernel_vmstat_events_total") == 6);
}

TEST_CASE("readVmstat reports a malformed line with its place") {
  VmstatTree t("pgpromote_success 10\npgdemote_kswapd x\n");
  auto r = sys::readVmstat(sys::SysRoot(t.root));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().describe().find("proc/vmstat") != std::string::npos);
}

TEST_CASE("readVmstat on the live system has the migration counters") {
  auto r = sys::readVmstat(sys::SysRoot::live());
  REQUIRE(r.ok());
  CHECK(r->count("pgmigrate_success") == 1);
}

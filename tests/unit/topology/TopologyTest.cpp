#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tierd/core/Units.h"
#include "tierd/topology/Topology.h"
#include "tierd/topology/TopologyJson.h"
#include "tierd/topology/TopologyProvider.h"

using namespace tierd;
using namespace tierd::topology;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = std::string(TIERD_FIXTURES) + "/topology/";

Topology load(const std::string& name, const TierOverride& o = {}) {
  auto t = readTopology(sys::SysRoot(kFixtures + name), o);
  if (!t) FAIL("readTopology(" << name << "): " << t.error().describe());
  return t.value();
}

std::vector<int> ids(std::initializer_list<int> l) {
  return l;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A writable copy of a fixture in a temp dir, removed on destruction.
struct FixtureCopy {
  fs::path dir;
  explicit FixtureCopy(const std::string& name) {
    char tmpl[] = "/tmp/topology-fixture-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    fs::copy(kFixtures + name, dir, fs::copy_options::recursive);
  }
  ~FixtureCopy() { fs::remove_all(dir); }
  void put(const std::string& abs, const std::string& text) const {
    std::ofstream(dir.string() + abs, std::ios::trunc) << text;
  }
  void remove(const std::string& abs) const { fs::remove_all(dir.string() + abs); }
  Result<Topology> read() const { return readTopology(sys::SysRoot(dir.string())); }
};

}  // namespace

TEST_CASE("host-1node: this build machine is one fast node with capacity") {
  Topology t = load("host-1node");
  REQUIRE(t.nodes.size() == 1);
  const Node& n = t.nodes[0];
  CHECK(n.id == 0);
  CHECK(n.tier == Tier::Fast);
  CHECK(n.hasCpu);
  CHECK(n.memTotal > n.memFree);
  CHECK(n.memFree > 0);
  CHECK(n.distance.at(0) == 10);
  CHECK(t.method == "single-tier");
  CHECK(contains(n.reason, "no slow memory found"));
  CHECK(t.nodesIn(Tier::Slow).empty());
  CHECK(t.caps.thpMode == "madvise");
  CHECK(t.caps.damonSysfs);
  CHECK(t.caps.damonKdamondsRunning == 1);
  CHECK(t.caps.damonOperations == std::vector<std::string>{"paddr"});
  CHECK(std::find(t.caps.perfPmus.begin(), t.caps.perfPmus.end(), "cpu") == t.caps.perfPmus.end());
}

TEST_CASE("qemu-2node: the rig's CPU-less node is slow by kernel memory tiers, with HMAT") {
  Topology t = load("qemu-2node");
  CHECK(t.method == "memory-tiers");
  CHECK(t.nodesIn(Tier::Fast) == ids({0}));
  CHECK(t.nodesIn(Tier::Slow) == ids({1}));
  const Node* n1 = t.node(1);
  REQUIRE(n1);
  CHECK(n1->reason == "kernel memory tier memory_tier22 is below memory_tier4 of 2 tiers");
  REQUIRE(n1->hmat);
  CHECK(n1->hmat->readLatencyNs == 250u);
  CHECK(n1->hmat->readBandwidthMBps == 10240u);
  CHECK(n1->hmat->initiators == std::set<int>{0});
  CHECK(n1->cpus.empty());
  REQUIRE(n1->hugePages.size() == 2);
  CHECK(n1->hugePages[1].pageSize == 1073741824ull);
  CHECK(n1->hugePages[1].free == 1);
  CHECK(t.caps.thpMode == "always");
  CHECK(t.caps.basePageSize == 4096);
  CHECK(t.caps.damonKdamonds == 0);
}

TEST_CASE("qemu-3node: two CXL nodes of different speed are both slow") {
  Topology t = load("qemu-3node");
  CHECK(t.method == "memory-tiers");
  CHECK(t.nodesIn(Tier::Fast) == ids({0}));
  CHECK(t.nodesIn(Tier::Slow) == ids({1, 2}));
  CHECK(t.node(1)->memoryTier == 22);
  CHECK(t.node(2)->memoryTier == 72);
}

TEST_CASE("zen-nps2-cxl: NPS2 DRAM nodes fast, CXL node 2 slow by memory tiers") {
  Topology t = load("zen-nps2-cxl");
  CHECK(t.method == "memory-tiers");
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 1}));
  CHECK(t.nodesIn(Tier::Slow) == ids({2}));
  CHECK(t.node(2)->reason == "kernel memory tier memory_tier35 is below memory_tier4 of 2 tiers");
  CHECK(t.node(0)->cpus.size() == 96);
}

TEST_CASE("2socket-cxl: CXL is slow even where its distance is below remote DRAM's") {
  Topology t = load("2socket-cxl");
  CHECK(t.method == "cpu-less");
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 1}));
  CHECK(t.nodesIn(Tier::Slow) == ids({2, 3}));
  CHECK(t.node(0)->distance.at(2) < t.node(0)->distance.at(1));
  CHECK(t.node(2)->reason ==
        "CPU-less memory node at distance 14 from nearest CPU node 0 (closer than remote DRAM "
        "node 1 by distance, but memory without CPUs is far memory)");
  CHECK(t.memoryTiers.empty());
}

TEST_CASE("sparse-ids: node ids 0, 1, 16, 17 map distances by id, not position") {
  Topology t = load("sparse-ids");
  CHECK(t.online == std::set<int>{0, 1, 16, 17});
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 1}));
  CHECK(t.nodesIn(Tier::Slow) == ids({16, 17}));
  CHECK(t.node(16)->distance.at(0) == 17);
  CHECK(t.node(17)->distance.at(1) == 17);
  CHECK(t.node(17)->distance.at(16) == 28);
  CHECK(t.node(16)->memoryTier == 22);
}

TEST_CASE("memoryless-cpu: CPU nodes without memory are not a memory tier") {
  Topology t = load("memoryless-cpu");
  CHECK(t.method == "cpu-less");
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 2}));
  CHECK(t.nodesIn(Tier::None) == ids({1, 3}));
  CHECK(t.nodesIn(Tier::Slow) == ids({4}));
  CHECK(t.node(1)->reason == "has CPUs but no memory: not a memory tier");
  CHECK(t.node(1)->hasCpu);
  CHECK_FALSE(t.node(1)->hasMemory);
}

TEST_CASE("cxl-same-tier: kernel put CXL with DRAM, HMAT still finds it") {
  Topology t = load("cxl-same-tier");
  CHECK(t.method == "hmat");
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 1}));
  CHECK(t.nodesIn(Tier::Slow) == ids({2, 3}));
  CHECK(contains(t.node(2)->reason, "HMAT read latency 280 ns (best 120 ns)"));
  REQUIRE(t.warnings.size() == 1);
  CHECK(contains(t.warnings[0], "one tier (memory_tier4)"));
}

TEST_CASE("cxl-same-tier without HMAT falls back to CPU-less nodes, with a warning") {
  FixtureCopy f("cxl-same-tier");
  for (int n = 0; n < 4; ++n)
    f.remove("/sys/devices/system/node/node" + std::to_string(n) + "/access0");
  auto t = f.read();
  REQUIRE(t.ok());
  CHECK(t->method == "cpu-less");
  CHECK(t->nodesIn(Tier::Slow) == ids({2, 3}));
  CHECK(contains(t->warnings.back(), "CPU-less nodes are treated as slow"));
}

TEST_CASE("an explicit config mapping wins over detection") {
  TierOverride o;
  o.fastNodes = {0, 1};
  o.slowNodes = {2};
  Topology t = load("cxl-same-tier", o);
  CHECK(t.method == "config");
  CHECK(t.nodesIn(Tier::Fast) == ids({0, 1}));
  CHECK(t.nodesIn(Tier::Slow) == ids({2}));
  CHECK(t.node(3)->tier == Tier::None);
  CHECK(t.node(3)->reason == "not listed in [tiers]: left alone");

  TierOverride bad;
  bad.fastNodes = {0};
  bad.slowNodes = {0};
  auto both = readTopology(sys::SysRoot(kFixtures + "cxl-same-tier"), bad);
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().message == "node 0 is listed as both fast and slow");
  TierOverride missing;
  missing.slowNodes = {9};
  auto none = readTopology(sys::SysRoot(kFixtures + "cxl-same-tier"), missing);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message == "node 9 does not exist");
  TierOverride memless;
  memless.slowNodes = {1};
  auto ml = readTopology(sys::SysRoot(kFixtures + "memoryless-cpu"), memless);
  REQUIRE_FALSE(ml.ok());
  CHECK(ml.error().message == "node 1 has no memory");
}

TEST_CASE("broken trees give errors naming the file and the offending text") {
  struct Breakage {
    std::string what;
    std::string file;
    std::string text;  // empty: remove the file
    std::string expect;
  };
  const std::string n1 = "/sys/devices/system/node/node1";
  const Breakage cases[] = {
      {"online missing", "/sys/devices/system/node/online", "", "online: missing kernel file"},
      {"online garbage", "/sys/devices/system/node/online", "0-x\n", "bad range '0-x'"},
      {"meminfo missing", n1 + "/meminfo", "", "node1/meminfo: cannot open"},
      {"meminfo garbage", n1 + "/meminfo", "Node 1 MemTotal: lots kB\n", "'lots'"},
      {"meminfo without MemFree", n1 + "/meminfo", "Node 1 MemTotal: 10 kB\n",
       "lacks MemTotal or MemFree"},
      {"distance short", n1 + "/distance", "20\n", "distance row has 1 entries for 2"},
      {"distance garbage", n1 + "/distance", "20 ten\n", "'20 ten'"},
      {"cpulist garbage", "/sys/devices/system/node/node0/cpulist", "0-1,\n", "0-1,"},
      {"hugepages garbage", n1 + "/hugepages/hugepages-2048kB/nr_hugepages", "-3\n", "'-3'"},
      {"hugepages missing", n1 + "/hugepages/hugepages-2048kB/free_hugepages", "",
       "missing nr_hugepages or free_hugepages"},
      {"hmat garbage", n1 + "/access0/initiators/read_latency", "250ns\n", "'250ns'"},
      {"tier nodelist garbage", "/sys/devices/virtual/memory_tiering/memory_tier22/nodelist",
       "one\n", "'one'"},
      {"tier nodelist missing", "/sys/devices/virtual/memory_tiering/memory_tier22/nodelist", "",
       "memory_tier22/nodelist: missing kernel file"},
  };
  for (const Breakage& b : cases) {
    CAPTURE(b.what);
    FixtureCopy f("qemu-2node");
    if (b.text.empty())
      f.remove(b.file);
    else
      f.put(b.file, b.text);
    auto t = f.read();
    REQUIRE_FALSE(t.ok());
    const std::string msg = t.error().describe();
    CAPTURE(msg);
    CHECK(contains(msg, b.expect));
    CHECK(contains(msg, f.dir.string()));
  }
}

TEST_CASE("optional facts may be missing without failing") {
  FixtureCopy f("qemu-2node");
  f.remove("/sys/devices/virtual/memory_tiering");
  f.remove("/sys/kernel/mm/transparent_hugepage");
  f.remove("/sys/devices/system/node/has_memory");
  f.remove("/sys/devices/system/node/node1/hugepages");
  f.remove("/proc/self/smaps");
  auto t = f.read();
  REQUIRE(t.ok());
  CHECK(t->method == "hmat");  // no kernel tiers: HMAT decides
  CHECK(t->nodesIn(Tier::Slow) == ids({1}));
  CHECK(t->caps.thpMode.empty());
  CHECK(t->caps.basePageSize == 0);
  CHECK(t->node(1)->hugePages.empty());
  CHECK(t->node(1)->hasMemory);  // from MemTotal
}

TEST_CASE("JSON form is stable: schema, tiers and per-node fields") {
  Topology t = load("qemu-2node");
  auto j = topologyToJson(t);
  CHECK(j["schema"] == 1);
  CHECK(j["method"] == "memory-tiers");
  CHECK(j["slow_nodes"] == nlohmann::json::array({1}));
  CHECK(j["nodes"][1]["tier"] == "slow");
  CHECK(j["nodes"][1]["hmat"]["read_latency_ns"] == 250);
  CHECK(j["nodes"][1]["distances"]["0"] == 20);
  CHECK(j["nodes"][1]["huge_pages"][1]["page_size_bytes"] == 1073741824ull);
  CHECK(j["nodes"][0]["hmat"]["initiators"] == nlohmann::json::array({0}));
  CHECK(j["memory_tiers"][1]["tier"] == 22);
  CHECK(j["capabilities"]["thp_mode"] == "always");
  std::string text = topologyToText(t);
  CHECK(contains(text, "classified by: memory-tiers"));
  CHECK(contains(text, "250ns,10240MB/s"));
}

TEST_CASE("free PMD-order blocks per node come from /proc/buddyinfo, absent or broken = unknown") {
  FixtureCopy f("2socket-cxl");
  auto none = f.read();
  REQUIRE(none.ok());
  for (const Node& n : none->nodes)
    CHECK_FALSE(n.freePmdBlockBytes.has_value());  // no buddyinfo in the tree

  // Order 9 = 2 MiB with 4 KiB pages (hpage_pmd_size 2097152 in the fixture); order 10 counts
  // twice. Node 3 is not listed: unknown.
  f.put("/proc/buddyinfo",
        "Node 0, zone   Normal  100  50  20  10  5  3  2  1  1  3  1\n"
        "Node 0, zone  Movable    0   0   0   0  0  0  0  0  0  1  0\n"
        "Node 1, zone   Normal  100  50  20  10  5  3  2  1  1  0  0\n"
        "Node 2, zone  Movable    0   0   0   0  0  0  0  0  0  0  7\n");
  auto t = f.read();
  REQUIRE(t.ok());
  CHECK(t->node(0)->freePmdBlockBytes == (3 + 2 + 1) * 2 * kMiB);
  CHECK(t->node(1)->freePmdBlockBytes == 0);
  CHECK(t->node(2)->freePmdBlockBytes == 7 * 4 * kMiB);
  CHECK_FALSE(t->node(3)->freePmdBlockBytes.has_value());

  f.put("/proc/buddyinfo", "Node 0, zone Normal 1 2 x\n");
  auto broken = f.read();
  REQUIRE(broken.ok());  // a warning, never an error
  CHECK_FALSE(broken->node(0)->freePmdBlockBytes.has_value());
  CHECK(std::any_of(broken->warnings.begin(), broken->warnings.end(),
                    [](const std::string& w) { return w.find("buddyinfo") != std::string::npos; }));
}

TEST_CASE("a kernel built from kernel-patches/ is told by its -tierdN release tag") {
  CHECK_FALSE(parseTierdKernelRelease("7.3.4+deb13-amd64").has_value());
  CHECK_FALSE(parseTierdKernelRelease("6.12.95+deb12-amd64").has_value());
  CHECK_FALSE(parseTierdKernelRelease("").has_value());
  CHECK_FALSE(parseTierdKernelRelease("7.3.4-tierd").has_value());
  CHECK_FALSE(parseTierdKernelRelease("7.3.4-tierd0").has_value());
  CHECK_FALSE(parseTierdKernelRelease("7.3.4-tierd1x").has_value());
  CHECK_FALSE(parseTierdKernelRelease("7.3.4-tierd-1").has_value());
  auto k = parseTierdKernelRelease("7.3.4-tierd1");
  REQUIRE(k.has_value());
  CHECK(k->revision == 1);
  CHECK(k->folioCopyChunked);
  CHECK(k->pagesStatBatched);
  auto dirty = parseTierdKernelRelease("7.3.4-tierd2+");
  REQUIRE(dirty.has_value());
  CHECK(dirty->revision == 2);

  // The rig's tree with the patched kernel's release (kernel-patches/7.3/guest.config).
  FixtureCopy f("qemu-2node");
  Topology stock = load("qemu-2node");
  CHECK_FALSE(stock.caps.tierdKernel.has_value());
  CHECK(topologyToJson(stock)["capabilities"]["tierd_kernel"].is_null());
  CHECK(contains(topologyToText(stock), "none (stock kernel)"));
  f.put("/proc/sys/kernel/osrelease", "7.3.4-tierd1\n");
  auto t = f.read();
  REQUIRE(t.ok());
  REQUIRE(t->caps.tierdKernel.has_value());
  CHECK(t->caps.tierdKernel->revision == 1);
  auto j = topologyToJson(t.value())["capabilities"];
  CHECK(j["kernel_release"] == "7.3.4-tierd1");
  CHECK(j["tierd_kernel"]["revision"] == 1);
  CHECK(j["tierd_kernel"]["folio_copy_chunked"] == true);
  CHECK(j["tierd_kernel"]["pages_stat_batched"] == true);
  CHECK(
      contains(topologyToText(t.value()), "tierd1: chunked folio copy, batched move_pages status"));
}

TEST_CASE("migrate_offload (kernel-patches/ patch 3) is read from its sysfs folder") {
  FixtureCopy f("qemu-2node");
  CHECK_FALSE(load("qemu-2node").caps.migrateOffload.has_value());
  CHECK(topologyToJson(load("qemu-2node"))["capabilities"]["migrate_offload"].is_null());
  CHECK(contains(topologyToText(load("qemu-2node")), "absent (no kernel-patches/ patch 3)"));

  // The patched kernel's answers at boot (the show functions of 0003-*.patch: "%d\n",
  // "[threads]\n", "%u\n", "%lu\n", space-separated reason names, "%ld\n").
  const std::string mo = "/sys/kernel/mm/migrate_offload";
  fs::create_directories(f.dir.string() + mo + "/counters");
  f.put(mo + "/enable", "0\n");
  f.put(mo + "/engine", "[threads]\n");
  f.put(mo + "/threads", "2\n");
  f.put(mo + "/min_batch_bytes", "2097152\n");
  f.put(mo + "/reasons", "numa_misplaced demotion damon\n");
  f.put(mo + "/counters/batches", "7\n");
  f.put(mo + "/counters/folios", "3584\n");
  f.put(mo + "/counters/bytes", "7516192768\n");
  f.put(mo + "/counters/fallbacks", "0\n");
  auto t = f.read();
  REQUIRE(t.ok());
  REQUIRE(t->caps.migrateOffload.has_value());
  const MigrateOffload& m = *t->caps.migrateOffload;
  CHECK_FALSE(m.enabled);
  CHECK(m.engine == "threads");
  CHECK(m.engines == std::vector<std::string>{"threads"});
  CHECK(m.threads == 2);
  CHECK(m.minBatchBytes == 2 * kMiB);
  CHECK(m.reasons == std::vector<std::string>{"numa_misplaced", "demotion", "damon"});
  CHECK(m.batches == 7);
  CHECK(m.folios == 3584);
  CHECK(m.bytes == 7516192768ULL);
  CHECK(m.fallbacks == 0);
  CHECK_FALSE(m.movePagesOffloaded());
  // Patches 3-5 without patch 6: no hugetlb_folios counter, no warning for it.
  CHECK_FALSE(m.hugetlbFolios.has_value());
  CHECK_FALSE(m.hugetlbOffloaded());
  CHECK(t->warnings.empty());
  CHECK(contains(topologyToText(t.value()),
                 "off, engine threads, 2 threads, min batch 2.0 MiB; "
                 "tierd's moves offloaded: no (enable is 0)"));

  // Enabled, but move_pages(2)'s reason is not among the reasons: tierd's calls copy on the CPU.
  f.put(mo + "/enable", "1\n");
  t = f.read();
  REQUIRE(t.ok());
  CHECK_FALSE(t->caps.migrateOffload->movePagesOffloaded());
  CHECK(contains(topologyToText(t.value()), "no (syscall_or_cpuset not in reasons)"));

  f.put(mo + "/reasons", "syscall_or_cpuset numa_misplaced demotion damon\n");
  t = f.read();
  REQUIRE(t.ok());
  CHECK(t->caps.migrateOffload->movePagesOffloaded());
  auto j = topologyToJson(t.value())["capabilities"]["migrate_offload"];
  CHECK(j["enabled"] == true);
  CHECK(j["engine"] == "threads");
  CHECK(j["move_pages_offloaded"] == true);
  CHECK(j["counters"]["bytes"] == 7516192768ULL);
  CHECK(j["hugetlb"] == false);
  CHECK(j["counters"]["hugetlb_folios"].is_null());
  CHECK(contains(topologyToText(t.value()), "tierd's moves offloaded: yes"));
  CHECK_FALSE(contains(topologyToText(t.value()), "hugetlb too"));

  // Patch 6: hugetlb folios are offloaded too, probed by their counter ("%ld\n").
  f.put(mo + "/counters/hugetlb_folios", "2\n");
  t = f.read();
  REQUIRE(t.ok());
  CHECK(t->caps.migrateOffload->hugetlbFolios == 2);
  CHECK(t->caps.migrateOffload->hugetlbOffloaded());
  j = topologyToJson(t.value())["capabilities"]["migrate_offload"];
  CHECK(j["hugetlb"] == true);
  CHECK(j["counters"]["hugetlb_folios"] == 2);
  CHECK(contains(topologyToText(t.value()), "min batch 2.0 MiB, hugetlb too; tierd's moves"));
  CHECK(t->warnings.empty());

  // A malformed or missing file leaves its field unknown and warns; the rest still reads.
  f.put(mo + "/threads", "many\n");
  f.remove(mo + "/counters/fallbacks");
  t = f.read();
  REQUIRE(t.ok());
  REQUIRE(t->caps.migrateOffload.has_value());
  CHECK_FALSE(t->caps.migrateOffload->threads.has_value());
  CHECK_FALSE(t->caps.migrateOffload->fallbacks.has_value());
  CHECK(t->caps.migrateOffload->batches == 7);
  REQUIRE(t->warnings.size() == 2);
  CHECK(contains(t->warnings[0], mo + "/threads is missing or malformed"));
  CHECK(contains(t->warnings[1], mo + "/counters/fallbacks is missing or malformed"));
}

TEST_CASE(
    "SysRootTopologyProvider: free memory and what a tick acts on every call, the rest every "
    "10th call or when the node lists change") {
  FixtureCopy f("qemu-2node");
  SysRootTopologyProvider p(sys::SysRoot(f.dir.string()));
  const std::string n1 = "/sys/devices/system/node/node1/";
  auto first = p.read({});
  REQUIRE(first.ok());
  CHECK(p.fullReads() == 1);
  CHECK(first->node(1)->tier == Tier::Slow);
  // What changes while the nodes stay is read on every call.
  f.put(n1 + "meminfo", "Node 1 MemTotal: 4127764 kB\nNode 1 MemFree: 1000 kB\n");
  f.put("/proc/sys/kernel/numa_balancing", "2\n");
  const std::string pool2m = n1 + "hugepages/hugepages-2048kB/";
  f.put(pool2m + "free_hugepages", "3\n");
  // What changes only with hotplug is kept between full reads (a distance row edited by hand),
  // and so is what is only reported (the THP mode) and a pool's size.
  f.put(n1 + "distance", "20 12\n");
  f.put("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
  f.put(pool2m + "nr_hugepages", "7\n");
  auto second = p.read({});
  REQUIRE(second.ok());
  CHECK(p.fullReads() == 1);
  CHECK(second->node(1)->memFree == 1000 * kKiB);
  CHECK(second->caps.numaBalancing == 2);
  REQUIRE(second->node(1)->hugePages.size() == 2);
  CHECK(second->node(1)->hugePages[0].free == 3);
  CHECK(second->node(1)->hugePages[0].total == first->node(1)->hugePages[0].total);
  CHECK(second->caps.thpMode == first->caps.thpMode);
  CHECK(second->node(1)->distance.at(1) == 10);
  CHECK(second->node(1)->tier == Tier::Slow);
  CHECK(second->method == first->method);
  for (int i = 3; i <= 10; ++i)
    REQUIRE(p.read({}).ok());
  CHECK(p.fullReads() == 1);
  auto eleventh = p.read({});  // the 10th call after the full read reads in full again
  REQUIRE(eleventh.ok());
  CHECK(p.fullReads() == 2);
  CHECK(eleventh->node(1)->distance.at(1) == 12);
  CHECK(eleventh->caps.thpMode == "never");
  CHECK(eleventh->node(1)->hugePages[0].total == 7);
  // A pool whose free count can no longer be read: that call reads in full.
  f.remove(pool2m + "free_hugepages");
  CHECK_FALSE(p.read({}).ok());
  f.put(pool2m + "free_hugepages", "3\n");
  REQUIRE(p.read({}).ok());
  CHECK(p.fullReads() == 3);
  // A node list that changes (hotplug) is read in full at once; so is a new override.
  f.put("/sys/devices/system/node/has_cpu", "0-1\n");
  REQUIRE(p.read({}).ok());
  CHECK(p.fullReads() == 4);
  TierOverride o;
  o.fastNodes = {0};
  o.slowNodes = {1};
  auto byConfig = p.read(o);
  REQUIRE(byConfig.ok());
  CHECK(p.fullReads() == 5);
  CHECK(byConfig->method == "config");
  // The same answers as a full read of the same files.
  auto refreshed = p.read(o);
  REQUIRE(refreshed.ok());
  CHECK(p.fullReads() == 5);
  auto full = readTopology(sys::SysRoot(f.dir.string()), o);
  REQUIRE(full.ok());
  CHECK(topologyToJson(refreshed.value()) == topologyToJson(full.value()));
}

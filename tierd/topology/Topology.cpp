#include "tierd/topology/Topology.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

namespace tierd::topology {
namespace {

const std::string kNodeDir = "/sys/devices/system/node";
const std::string kTierDir = "/sys/devices/virtual/memory_tiering";
const std::string kDamonDir = "/sys/kernel/mm/damon/admin";
const std::string kOffloadDir = "/sys/kernel/mm/migrate_offload";

std::string nodePath(int id) {
  return kNodeDir + "/node" + std::to_string(id);
}

// Reads an id list file; a missing file is an error only when `required`.
Result<std::optional<std::set<int>>> readIdList(const sys::SysRoot& root, const std::string& abs,
                                                bool required) {
  if (!root.exists(abs)) {
    if (required) return Error::env("missing kernel file", root.path(abs));
    return std::optional<std::set<int>>();
  }
  auto text = root.read(abs);
  if (!text) return text.error();
  auto ids = sys::parseIdList(text.value(), root.path(abs));
  if (!ids) return ids.error();
  return std::optional<std::set<int>>(std::move(ids.value()));
}

// Reads an optional unsigned attribute: absent -> nullopt, garbage -> error.
Result<std::optional<uint64_t>> readOptU64(const sys::SysRoot& root, const std::string& abs) {
  if (!root.exists(abs)) return std::optional<uint64_t>();
  auto text = root.read(abs);
  if (!text) return text.error();
  auto v = sys::parseU64(text.value(), root.path(abs));
  if (!v) return v.error();
  return std::optional<uint64_t>(v.value());
}

Status readHugePages(const sys::SysRoot& root, Node& node) {
  const std::string dir = nodePath(node.id) + "/hugepages";
  if (!root.exists(dir)) return Ok{};
  auto names = root.list(dir);
  if (!names) return names.error();
  for (const std::string& name : names.value()) {
    const std::string prefix = "hugepages-";
    if (name.rfind(prefix, 0) != 0) continue;
    auto size = sys::parseKbSize(name.substr(prefix.size()), root.path(dir + "/" + name));
    if (!size) return size.error();
    HugePagePool pool;
    pool.pageSize = size.value();
    auto nr = readOptU64(root, dir + "/" + name + "/nr_hugepages");
    if (!nr) return nr.error();
    auto fr = readOptU64(root, dir + "/" + name + "/free_hugepages");
    if (!fr) return fr.error();
    if (!nr.value() || !fr.value())
      return Error::env("missing nr_hugepages or free_hugepages", root.path(dir + "/" + name));
    pool.total = *nr.value();
    pool.free = *fr.value();
    node.hugePages.push_back(pool);
  }
  std::sort(node.hugePages.begin(), node.hugePages.end(),
            [](const HugePagePool& a, const HugePagePool& b) { return a.pageSize < b.pageSize; });
  return Ok{};
}

// HugePagePool::free of the pools readHugePages found on `node` (free_hugepages only: the pool
// sizes and nr_hugepages change only when an operator resizes a pool, seen by the next full
// read). Errors: a pool's free_hugepages unreadable, absent or malformed.
Status readFreeHugePages(const sys::SysRoot& root, Node& node) {
  for (HugePagePool& pool : node.hugePages) {
    const std::string file = nodePath(node.id) + "/hugepages/hugepages-" +
                             std::to_string(pool.pageSize / kKiB) + "kB/free_hugepages";
    auto fr = readOptU64(root, file);
    if (!fr) return fr.error();
    if (!fr.value()) return Error::env("missing free_hugepages", root.path(file));
    pool.free = *fr.value();
  }
  return Ok{};
}

Status readHmat(const sys::SysRoot& root, Node& node) {
  const std::string dir = nodePath(node.id) + "/access0/initiators";
  if (!root.exists(dir)) return Ok{};
  HmatAccess h;
  struct Attr {
    const char* file;
    std::optional<uint64_t> HmatAccess::*field;
  };
  const Attr attrs[] = {{"read_latency", &HmatAccess::readLatencyNs},
                        {"write_latency", &HmatAccess::writeLatencyNs},
                        {"read_bandwidth", &HmatAccess::readBandwidthMBps},
                        {"write_bandwidth", &HmatAccess::writeBandwidthMBps}};
  for (const Attr& a : attrs) {
    auto v = readOptU64(root, dir + "/" + a.file);
    if (!v) return v.error();
    h.*(a.field) = v.value();
  }
  auto names = root.list(dir);
  if (!names) return names.error();
  for (const std::string& n : names.value()) {
    if (n.rfind("node", 0) != 0) continue;
    auto id = sys::parseU64(n.substr(4), root.path(dir + "/" + n));
    if (!id) return id.error();
    h.initiators.insert(static_cast<int>(id.value()));
  }
  node.hmat = h;
  return Ok{};
}

// Node::memTotal and memFree from nodeN/meminfo. Errors: unreadable, malformed, or lacking either.
Status readNodeMeminfo(const sys::SysRoot& root, Node& node) {
  const std::string path = nodePath(node.id) + "/meminfo";
  auto text = root.read(path);
  if (!text) return text.error();
  auto meminfo = sys::parseMeminfo(text.value(), root.path(path));
  if (!meminfo) return meminfo.error();
  auto total = meminfo->find("MemTotal");
  auto free = meminfo->find("MemFree");
  if (total == meminfo->end() || free == meminfo->end())
    return Error::input("meminfo lacks MemTotal or MemFree", root.path(path));
  node.memTotal = total->second;
  node.memFree = free->second;
  return Ok{};
}

Result<Node> readNode(const sys::SysRoot& root, int id, const std::set<int>& hasCpu,
                      const std::optional<std::set<int>>& hasMemory) {
  Node node;
  node.id = id;
  node.online = true;
  const std::string dir = nodePath(id);
  if (!root.exists(dir)) return Error::env("online node has no directory", root.path(dir));

  auto cpus = readIdList(root, dir + "/cpulist", false);
  if (!cpus) return cpus.error();
  if (cpus.value()) node.cpus = *cpus.value();
  node.hasCpu = hasCpu.count(id) != 0 || !node.cpus.empty();

  if (Status s = readNodeMeminfo(root, node); !s) return s.error();
  node.hasMemory = hasMemory ? hasMemory->count(id) != 0 : node.memTotal > 0;

  auto distText = root.read(dir + "/distance");
  if (!distText) return distText.error();
  auto row = sys::parseU64Row(distText.value(), root.path(dir + "/distance"));
  if (!row) return row.error();
  // The row is indexed by position in the online list; the caller maps positions to ids.
  for (size_t i = 0; i < row->size(); ++i)
    node.distance[static_cast<int>(i)] = (*row)[i];

  if (Status s = readHugePages(root, node); !s) return s.error();
  if (Status s = readHmat(root, node); !s) return s.error();
  return node;
}

Status readMemoryTiers(const sys::SysRoot& root, Topology& topo) {
  if (!root.exists(kTierDir)) return Ok{};
  auto names = root.list(kTierDir);
  if (!names) return names.error();
  const std::string prefix = "memory_tier";
  for (const std::string& n : names.value()) {
    if (n.rfind(prefix, 0) != 0) continue;
    const std::string dir = kTierDir + "/" + n;
    auto num = sys::parseU64(n.substr(prefix.size()), root.path(dir));
    if (!num) return num.error();
    auto ids = readIdList(root, dir + "/nodelist", true);
    if (!ids) return ids.error();
    topo.memoryTiers[static_cast<int>(num.value())] = *ids.value();
  }
  return Ok{};
}

template <typename T>
std::optional<T> readOptInt(const sys::SysRoot& root, const std::string& abs) {
  auto text = root.readAttr(abs);
  if (!text) return std::nullopt;
  auto v = sys::parseI64(text.value(), root.path(abs));
  if (!v) return std::nullopt;
  return static_cast<T>(v.value());
}

uint64_t basePageSizeOf(const sys::SysRoot& root) {
  if (root.isLive()) return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto smaps = root.read("/proc/self/smaps");
  if (!smaps) return 0;
  std::istringstream in(smaps.value());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("KernelPageSize:", 0) != 0) continue;
    auto info = sys::parseMeminfo(line, root.path("/proc/self/smaps"));
    if (info && info->count("KernelPageSize")) return info->at("KernelPageSize");
  }
  return 0;
}

// Node::freePmdBlockBytes from /proc/buddyinfo. Absent or malformed: unknown (a warning for
// malformed text), never an error: THP room then falls back to MemFree.
void readFreePmdBlocks(const sys::SysRoot& root, Topology& topo) {
  const uint64_t base = topo.caps.basePageSize, pmd = topo.caps.pmdPageSize;
  if (base == 0 || pmd <= base || pmd % base != 0) return;
  unsigned order = 0;
  while ((base << order) < pmd)
    ++order;
  if ((base << order) != pmd) return;
  auto text = root.read("/proc/buddyinfo");
  if (!text) return;
  auto zones = sys::parseBuddyinfo(text.value(), root.path("/proc/buddyinfo"));
  if (!zones) {
    topo.warnings.push_back(zones.error().describe());
    return;
  }
  for (Node& n : topo.nodes) {
    bool listed = false;
    for (const sys::BuddyZone& z : zones.value())
      listed = listed || z.node == n.id;
    if (listed) n.freePmdBlockBytes = sys::freeBytesAtOrder(zones.value(), n.id, order, base);
  }
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string w;
  while (in >> w)
    out.push_back(w);
  return out;
}

// Capabilities::migrateOffload from kOffloadDir (patch 3). A file that is missing or malformed
// leaves its field unknown and adds a warning: a partial folder is a kernel we did not build.
std::optional<MigrateOffload> readMigrateOffload(const sys::SysRoot& root,
                                                 std::vector<std::string>& warnings) {
  if (!root.exists(kOffloadDir)) return std::nullopt;
  MigrateOffload m;
  auto warn = [&](const std::string& file) {
    warnings.push_back("migrate offload: " + root.path(kOffloadDir + "/" + file) +
                       " is missing or malformed");
  };
  if (auto e = readOptInt<int>(root, kOffloadDir + "/enable"); e && (*e == 0 || *e == 1))
    m.enabled = *e == 1;
  else
    warn("enable");
  if (auto e = root.read(kOffloadDir + "/engine")) {
    if (auto active = sys::parseBracketChoice(e.value(), root.path(kOffloadDir + "/engine")))
      m.engine = active.value();
    for (std::string w : words(e.value()))
      m.engines.push_back(w.front() == '[' && w.back() == ']' ? w.substr(1, w.size() - 2) : w);
  }
  if (m.engine.empty()) warn("engine");
  m.threads = readOptInt<int>(root, kOffloadDir + "/threads");
  if (!m.threads) warn("threads");
  if (auto b = readOptInt<int64_t>(root, kOffloadDir + "/min_batch_bytes"); b && *b >= 0)
    m.minBatchBytes = static_cast<uint64_t>(*b);
  else
    warn("min_batch_bytes");
  if (auto r = root.read(kOffloadDir + "/reasons"))
    m.reasons = words(r.value());
  else
    warn("reasons");
  // `optional`: a counter a later patch added, whose absence is no fault (no warning).
  auto counter = [&](const char* name, bool optional = false) -> std::optional<uint64_t> {
    auto v = readOptInt<int64_t>(root, kOffloadDir + "/counters/" + name);
    if (!v || *v < 0) {
      if (!optional) warn(std::string("counters/") + name);
      return std::nullopt;
    }
    return static_cast<uint64_t>(*v);
  };
  m.batches = counter("batches");
  m.folios = counter("folios");
  m.bytes = counter("bytes");
  m.fallbacks = counter("fallbacks");
  m.hugetlbFolios = counter("hugetlb_folios", /*optional=*/true);  // patch 6
  return m;
}

// The run-time capabilities a tick acts on, read by every refreshTopology: numa_balancing (the
// kernel's own tiering holds tierd's moves) and the migrate_offload folder (the migrator's call
// size).
void readTickCapabilities(const sys::SysRoot& root, Capabilities& c,
                          std::vector<std::string>& warnings) {
  c.numaBalancing = readOptInt<int>(root, "/proc/sys/kernel/numa_balancing");
  c.migrateOffload = readMigrateOffload(root, warnings);
}

// The run-time capabilities only reported (tierctl topology, the capability metrics): THP mode,
// demotion_enabled, perf_event_paranoid, DAMON's kdamonds. Read with the full read only (every
// kFullReadEvery ticks in the daemon): under TCG each file read costs ~1 ms of the tick.
void readReportedRuntimeCapabilities(const sys::SysRoot& root, Capabilities& c,
                                     std::vector<std::string>& warnings) {
  c.thpMode.clear();
  if (auto t = root.read("/sys/kernel/mm/transparent_hugepage/enabled")) {
    auto mode = sys::parseBracketChoice(t.value(),
                                        root.path("/sys/kernel/mm/transparent_hugepage/enabled"));
    if (mode)
      c.thpMode = mode.value();
    else
      warnings.push_back(mode.error().describe());
  }
  c.demotionEnabled.reset();
  if (auto d = root.readAttr("/sys/kernel/mm/numa/demotion_enabled")) {
    if (d.value() == "true" || d.value() == "1") c.demotionEnabled = true;
    if (d.value() == "false" || d.value() == "0") c.demotionEnabled = false;
  }
  c.perfEventParanoid = readOptInt<int>(root, "/proc/sys/kernel/perf_event_paranoid");
  c.damonKdamonds = 0;
  c.damonKdamondsRunning = 0;
  c.damonOperations.clear();
  if (c.damonSysfs) {
    const std::string kd = kDamonDir + "/kdamonds";
    c.damonKdamonds = readOptInt<int>(root, kd + "/nr_kdamonds").value_or(0);
    for (int i = 0; i < c.damonKdamonds; ++i) {
      const std::string dir = kd + "/" + std::to_string(i);
      if (auto st = sys::readDamonAttr(root, dir + "/state"); st && st.value() == "on")
        ++c.damonKdamondsRunning;
      // avail_operations lives in a context; read it where one exists (never create one).
      if (c.damonOperations.empty()) {
        if (auto ops = root.readAttr(dir + "/contexts/0/avail_operations"))
          c.damonOperations = words(ops.value());
      }
    }
  }
}

Capabilities readCapabilities(const sys::SysRoot& root, std::vector<std::string>& warnings) {
  Capabilities c;
  if (auto r = root.readAttr("/proc/sys/kernel/osrelease")) c.kernelRelease = r.value();
  c.tierdKernel = parseTierdKernelRelease(c.kernelRelease);
  if (auto v = readOptInt<int64_t>(root, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"))
    c.pmdPageSize = static_cast<uint64_t>(*v);
  c.basePageSize = basePageSizeOf(root);
  if (auto pmus = root.list("/sys/bus/event_source/devices")) c.perfPmus = pmus.value();
  c.damonSysfs = root.exists(kDamonDir);
  readReportedRuntimeCapabilities(root, c, warnings);
  return c;
}

std::string joinIds(const std::set<int>& ids) {
  return sys::formatIdList(ids);
}

}  // namespace

bool MigrateOffload::movePagesOffloaded() const {
  return enabled && std::find(reasons.begin(), reasons.end(), "syscall_or_cpuset") != reasons.end();
}

std::optional<TierdKernel> parseTierdKernelRelease(const std::string& release) {
  static const std::string kTag = "-tierd";
  const size_t at = release.rfind(kTag);
  if (at == std::string::npos) return std::nullopt;
  std::string digits = release.substr(at + kTag.size());
  if (!digits.empty() && digits.back() == '+') digits.pop_back();  // kbuild: tree modified
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  TierdKernel k;
  k.revision = std::stoi(digits);
  if (k.revision < 1) return std::nullopt;
  k.folioCopyChunked = k.revision >= 1;
  k.pagesStatBatched = k.revision >= 1;
  return k;
}

const char* tierName(Tier t) {
  switch (t) {
    case Tier::Fast:
      return "fast";
    case Tier::Slow:
      return "slow";
    case Tier::None:
      return "none";
  }
  return "none";
}

const Node* Topology::node(int id) const {
  for (const Node& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

std::vector<int> Topology::nodesIn(Tier t) const {
  std::vector<int> out;
  for (const Node& n : nodes)
    if (n.tier == t) out.push_back(n.id);
  return out;
}

Result<Topology> readTopology(const sys::SysRoot& root, const TierOverride& override) {
  Topology topo;
  auto possible = readIdList(root, kNodeDir + "/possible", false);
  if (!possible) return possible.error();
  auto online = readIdList(root, kNodeDir + "/online", true);
  if (!online) return online.error();
  topo.online = *online.value();
  topo.possible = possible.value() ? *possible.value() : topo.online;
  if (topo.online.empty())
    return Error::input("no online NUMA node", root.path(kNodeDir + "/online"));

  auto hasCpu = readIdList(root, kNodeDir + "/has_cpu", false);
  if (!hasCpu) return hasCpu.error();
  auto hasMemory = readIdList(root, kNodeDir + "/has_memory", false);
  if (!hasMemory) return hasMemory.error();

  std::vector<int> order(topo.online.begin(), topo.online.end());
  for (int id : order) {
    auto node = readNode(root, id, hasCpu.value().value_or(std::set<int>{}), hasMemory.value());
    if (!node) return node.error();
    // nodeN/distance lists one entry per online node, in ascending id order (drivers/base/node.c).
    if (node->distance.size() != order.size())
      return Error::input("distance row has " + std::to_string(node->distance.size()) +
                              " entries for " + std::to_string(order.size()) + " online nodes",
                          root.path(nodePath(id) + "/distance"));
    std::map<int, uint64_t> byId;
    for (size_t i = 0; i < order.size(); ++i)
      byId[order[i]] = node->distance[static_cast<int>(i)];
    node->distance = std::move(byId);
    topo.nodes.push_back(std::move(node.value()));
  }

  if (Status s = readMemoryTiers(root, topo); !s) return s.error();
  for (const auto& [tier, ids] : topo.memoryTiers)
    for (int id : ids)
      for (Node& n : topo.nodes)
        if (n.id == id) n.memoryTier = tier;

  topo.caps = readCapabilities(root, topo.warnings);
  topo.keptWarnings = topo.warnings;
  readTickCapabilities(root, topo.caps, topo.warnings);
  readFreePmdBlocks(root, topo);
  if (Status s = classify(topo, override); !s) return s.error();
  return topo;
}

Status refreshTopology(const sys::SysRoot& root, Topology& topo, const TierOverride& override) {
  topo.warnings = topo.keptWarnings;
  for (Node& node : topo.nodes) {
    if (Status s = readNodeMeminfo(root, node); !s) return s.error();
    if (Status s = readFreeHugePages(root, node); !s) return s.error();
    node.freePmdBlockBytes.reset();
    node.tier = Tier::None;
    node.reason.clear();
  }
  readTickCapabilities(root, topo.caps, topo.warnings);
  readFreePmdBlocks(root, topo);
  return classify(topo, override);
}

namespace {

// The memory nodes' kernel memory tiers; `allTiered` false when a memory node is in none.
std::set<int> memoryTiersOf(const std::vector<Node*>& mem, bool& allTiered) {
  std::set<int> tiersWithMemory;
  allTiered = true;
  for (Node* n : mem) {
    if (n->memoryTier)
      tiersWithMemory.insert(*n->memoryTier);
    else
      allTiered = false;
  }
  return tiersWithMemory;
}

// 1. Explicit mapping from the config. Errors: a node in both lists, a listed node that does not
//    exist or has no memory.
Status classifyByConfig(Topology& topo, const std::vector<Node*>& mem,
                        const TierOverride& override) {
  for (int id : override.fastNodes)
    if (override.slowNodes.count(id))
      return Error::input("node " + std::to_string(id) + " is listed as both fast and slow",
                          "[tiers]");
  for (const std::set<int>* set : {&override.fastNodes, &override.slowNodes})
    for (int id : *set) {
      const Node* n = topo.node(id);
      if (!n) return Error::input("node " + std::to_string(id) + " does not exist", "[tiers]");
      if (!(n->hasMemory && n->memTotal > 0))
        return Error::input("node " + std::to_string(id) + " has no memory", "[tiers]");
    }
  for (Node* n : mem) {
    if (override.fastNodes.count(n->id)) {
      n->tier = Tier::Fast;
      n->reason = "configured as fast in [tiers]";
    } else if (override.slowNodes.count(n->id)) {
      n->tier = Tier::Slow;
      n->reason = "configured as slow in [tiers]";
    } else {
      n->tier = Tier::None;
      n->reason = "not listed in [tiers]: left alone";
    }
  }
  topo.method = "config";
  return Ok{};
}

// 2. Kernel memory tiers: lowest tier number (abstract distance chunk) holding memory is fast.
//    Decides (true) when every memory node is in a tier and there are two tiers or more.
bool classifyByMemoryTiers(Topology& topo, const std::vector<Node*>& mem,
                           const std::set<int>& tiersWithMemory, bool allTiered) {
  if (allTiered && tiersWithMemory.size() >= 2) {
    const int fastTier = *tiersWithMemory.begin();
    for (Node* n : mem) {
      const int t = *n->memoryTier;
      n->tier = t == fastTier ? Tier::Fast : Tier::Slow;
      n->reason = "kernel memory tier memory_tier" + std::to_string(t) +
                  (t == fastTier ? " is the lowest (fastest) of "
                                 : " is below memory_tier" + std::to_string(fastTier) + " of ") +
                  std::to_string(tiersWithMemory.size()) + " tiers";
    }
    topo.method = "memory-tiers";
    return true;
  }
  if (!allTiered && !tiersWithMemory.empty())
    topo.warnings.push_back("some memory nodes are in no kernel memory tier; tiers ignored");
  return false;
}

// 3. HMAT: every memory node reports read latency; a node whose latency is at least 1.5x the
//    best, or whose read bandwidth is at most half the best, is slow. Decides (true) when every
//    memory node reports a latency and one of them is slow.
bool classifyByHmat(Topology& topo, const std::vector<Node*>& mem,
                    const std::set<int>& tiersWithMemory) {
  for (Node* n : mem)
    if (!n->hmat || !n->hmat->readLatencyNs) return false;
  uint64_t bestLat = UINT64_MAX, bestBw = 0;
  for (Node* n : mem) {
    bestLat = std::min(bestLat, *n->hmat->readLatencyNs);
    if (n->hmat->readBandwidthMBps) bestBw = std::max(bestBw, *n->hmat->readBandwidthMBps);
  }
  bool anySlow = false;
  for (Node* n : mem) {
    const uint64_t lat = *n->hmat->readLatencyNs;
    const auto bw = n->hmat->readBandwidthMBps;
    const bool slowLat = lat * 2 >= bestLat * 3;
    const bool slowBw = bw && bestBw > 0 && *bw * 2 <= bestBw;
    std::string facts = "HMAT read latency " + std::to_string(lat) + " ns (best " +
                        std::to_string(bestLat) + " ns)";
    if (bw)
      facts += ", read bandwidth " + std::to_string(*bw) + " MB/s (best " + std::to_string(bestBw) +
               " MB/s)";
    n->tier = (slowLat || slowBw) ? Tier::Slow : Tier::Fast;
    n->reason = facts + (n->tier == Tier::Slow ? ": slower than the best node" : ": near the best");
    anySlow |= n->tier == Tier::Slow;
  }
  if (!anySlow) return false;
  topo.method = "hmat";
  if (tiersWithMemory.size() == 1)
    topo.warnings.push_back("the kernel put all memory in one tier (memory_tier" +
                            std::to_string(*tiersWithMemory.begin()) +
                            "); HMAT tells the nodes apart");
  return true;
}

// The reason of CPU-less memory node `n`: its distance from the nearest CPU node, with a warning
// when that distance is local and a note when it is closer than a remote DRAM node.
void explainCpuLess(Topology& topo, Node& n, const std::vector<Node*>& cpuNodes) {
  uint64_t nearest = UINT64_MAX;
  int nearestId = -1;
  for (Node* c : cpuNodes) {
    auto d = c->distance.find(n.id);
    if (d != c->distance.end() && d->second < nearest) {
      nearest = d->second;
      nearestId = c->id;
    }
  }
  n.reason = "CPU-less memory node";
  if (nearestId < 0) return;
  const Node* nearCpu = topo.node(nearestId);
  auto self = nearCpu->distance.find(nearestId);
  const uint64_t local = self != nearCpu->distance.end() ? self->second : 10;
  n.reason += " at distance " + std::to_string(nearest) + " from nearest CPU node " +
              std::to_string(nearestId);
  if (nearest <= local)
    topo.warnings.push_back("node " + std::to_string(n.id) +
                            " has no CPUs but local distance; treated as slow, check firmware");
  // A CPU-less node closer by number than a remote DRAM node is still slow (CXL hosts in the
  // field).
  for (Node* d : cpuNodes) {
    auto dd = nearCpu->distance.find(d->id);
    if (d != nearCpu && d->hasMemory && dd != nearCpu->distance.end() && dd->second > nearest) {
      n.reason += " (closer than remote DRAM node " + std::to_string(d->id) +
                  " by distance, but memory without CPUs is far memory)";
      break;
    }
  }
}

// 4. CPU-less memory nodes are slow; memory nodes with CPUs are fast. Distances are checked,
//    never used to rank a CPU-less node above DRAM. Always decides.
void classifyByCpus(Topology& topo, const std::vector<Node*>& mem,
                    const std::set<int>& tiersWithMemory) {
  std::vector<Node*> cpuNodes;
  for (Node& n : topo.nodes)
    if (n.hasCpu) cpuNodes.push_back(&n);
  bool anySlow = false;
  for (Node* n : mem) {
    if (n->hasCpu) {
      n->tier = Tier::Fast;
      n->reason = "has CPUs " + joinIds(n->cpus) + " and memory (DRAM)";
      continue;
    }
    n->tier = Tier::Slow;
    anySlow = true;
    explainCpuLess(topo, *n, cpuNodes);
  }
  topo.method = anySlow ? "cpu-less" : "single-tier";
  if (!anySlow) {
    for (Node* n : mem)
      n->reason += "; no slow memory found: nothing to tier";
  }
  if (tiersWithMemory.size() == 1 && anySlow)
    topo.warnings.push_back("the kernel put all memory in one tier (memory_tier" +
                            std::to_string(*tiersWithMemory.begin()) +
                            "); CPU-less nodes are treated as slow");
}

}  // namespace

Status classify(Topology& topo, const TierOverride& override) {
  std::vector<Node*> mem;
  for (Node& n : topo.nodes) {
    n.tier = Tier::None;
    n.reason.clear();
    if (n.hasMemory && n.memTotal > 0) {
      mem.push_back(&n);
    } else {
      n.reason = n.hasCpu ? "has CPUs but no memory: not a memory tier" : "no memory";
    }
  }
  if (!override.empty()) return classifyByConfig(topo, mem, override);
  if (mem.empty()) {
    topo.method = "single-tier";
    topo.warnings.push_back("no node has memory");
    return Ok{};
  }
  bool allTiered = true;
  const std::set<int> tiersWithMemory = memoryTiersOf(mem, allTiered);
  if (classifyByMemoryTiers(topo, mem, tiersWithMemory, allTiered)) return Ok{};
  if (classifyByHmat(topo, mem, tiersWithMemory)) return Ok{};
  classifyByCpus(topo, mem, tiersWithMemory);
  return Ok{};
}

}  // namespace tierd::topology

#include "tierd/daemon/LocationCache.h"

#include <algorithm>
#include <iterator>

#include "tierd/core/Units.h"

namespace tierd::daemon {

// Mappings tierd manages: private anonymous memory (heap, anonymous mmap, and anonymous mmap named
// with prctl(PR_SET_VMA_ANON_NAME), shown as "[anon:NAME]" since Linux 5.17) and hugetlb.
// File-backed, shared and special mappings ([stack] aside) are left to the kernel.
std::vector<policy::Mapping> managedMappings(const std::vector<sys::SmapsVma>& vmas,
                                             uint64_t basePage, uint64_t pmdSize) {
  std::vector<policy::Mapping> out;
  for (const sys::SmapsVma& v : vmas) {
    const bool hugetlb = v.hugetlb();
    const bool anon = v.path.empty() || v.path == "[heap]" || v.path.rfind("[anon:", 0) == 0;
    const bool privateRw =
        v.perms.size() >= 4 && v.perms[0] == 'r' && v.perms[1] == 'w' && v.perms[3] == 'p';
    if (!hugetlb && !(anon && privateRw)) continue;
    if (v.size() == 0) continue;
    policy::Mapping m;
    m.start = v.start;
    m.end = v.end;
    m.hugetlb = hugetlb;
    if (hugetlb)
      m.pageSize = v.kernelPageSize;
    else if (v.thpEligible.value_or(false) || v.anonHugePages > 0)
      m.pageSize = pmdSize;
    else
      m.pageSize = v.kernelPageSize ? v.kernelPageSize : basePage;
    out.push_back(m);
  }
  return out;
}

namespace {
// The mapping of `mappings` (any order) that holds `addr`, or nullptr.
const policy::Mapping* mappingHolding(const std::vector<policy::Mapping>& mappings, uint64_t addr) {
  auto it = std::find_if(mappings.begin(), mappings.end(), [addr](const policy::Mapping& m) {
    return m.start <= addr && addr < m.end;
  });
  return it == mappings.end() ? nullptr : &*it;
}
}  // namespace

std::vector<std::pair<uint64_t, NodeId>> regionNodes(const std::vector<policy::Mapping>& mappings,
                                                     const std::vector<LocatedRun>& runs,
                                                     uint64_t* probes) {
  // The mapping holding each run's start, by binary search over the mappings sorted by start
  // (smaps lists them so; sorted here when a reader did not), not a scan of every mapping per run.
  std::vector<const policy::Mapping*> byStart;
  byStart.reserve(mappings.size());
  for (const policy::Mapping& m : mappings)
    byStart.push_back(&m);
  auto earlier = [](const policy::Mapping* x, const policy::Mapping* y) {
    return x->start < y->start;
  };
  if (!std::is_sorted(byStart.begin(), byStart.end(), earlier))
    std::stable_sort(byStart.begin(), byStart.end(), earlier);
  uint64_t looked = 0;
  auto holding = [&](uint64_t addr) -> const policy::Mapping* {
    auto it = std::upper_bound(byStart.begin(), byStart.end(), addr,
                               [&looked](uint64_t a, const policy::Mapping* m) {
                                 ++looked;
                                 return a < m->start;
                               });
    if (it == byStart.begin()) return nullptr;
    const policy::Mapping* m = *std::prev(it);
    return addr < m->end ? m : nullptr;
  };
  std::map<uint64_t, std::map<NodeId, uint64_t>> bytes;
  for (const LocatedRun& run : runs) {
    if (run.status < 0) continue;
    const policy::Mapping* m = holding(run.start);
    const uint64_t regionSize = (m && m->hugetlb && m->pageSize >= kGiB) ? m->pageSize : 2 * kMiB;
    uint64_t a = run.start;
    const uint64_t end = run.start + run.length;
    while (a < end) {
      const uint64_t region = a & ~(regionSize - 1);
      const uint64_t stop = std::min(end, region + regionSize);
      bytes[region][run.status] += stop - a;
      a = stop;
    }
  }
  if (probes) *probes += looked;
  std::vector<std::pair<uint64_t, NodeId>> out;
  out.reserve(bytes.size());
  for (const auto& [region, perNode] : bytes) {
    auto best = std::max_element(perNode.begin(), perNode.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; });
    out.emplace_back(region, best->first);
  }
  return out;
}

LocationCache::LocationCache(migrate::Migrator& migrator, migrate::ProcReads& reads,
                             policy::HeatModel& heat, MappingsReader mappings,
                             NumaMapsReader numaMaps, MappingsReader layout)
    : migrator_(migrator),
      reads_(reads),
      heat_(heat),
      mappings_(std::move(mappings)),
      numaMaps_(std::move(numaMaps)),
      layout_(std::move(layout)) {}

void LocationCache::clearReads() {
  reads_.clear();
}

void LocationCache::invalidate(pid_t pid) {
  if (auto it = entries_.find(pid); it != entries_.end()) it->second.fullReadAtNs.reset();
}

void LocationCache::forget(pid_t pid) {
  entries_.erase(pid);
}

bool LocationCache::sameLayout(const std::vector<sys::SmapsVma>& maps,
                               const std::vector<sys::SmapsVma>& read) {
  return std::equal(maps.begin(), maps.end(), read.begin(), read.end(),
                    [](const sys::SmapsVma& a, const sys::SmapsVma& b) {
                      return a.start == b.start && a.end == b.end && a.offset == b.offset &&
                             a.inode == b.inode && a.perms == b.perms && a.path == b.path;
                    });
}

uint64_t LocationCache::Entry::anonHugeAt(uint64_t vmaStart) const {
  if (!smaps) return 0;
  auto v = std::lower_bound(smaps->begin(), smaps->end(), vmaStart,
                            [](const sys::SmapsVma& x, uint64_t a) { return x.start < a; });
  return v != smaps->end() && v->start == vmaStart ? v->anonHugePages : 0;
}

bool LocationCache::reusable(pid_t pid, const Entry& proc, uint64_t nowNs,
                             uint64_t fullLocateIntervalNs) {
  const uint64_t every = fullLocateIntervalNs;
  if (!proc.fullReadAtNs || every == 0 || nowNs < *proc.fullReadAtNs ||
      nowNs - *proc.fullReadAtNs >= every)
    return false;
  auto maps = layout_(pid);  // unreadable: the full read says why
  return maps && proc.smaps && sameLayout(maps.value(), *proc.smaps);
}

void LocationCache::refresh(pid_t pid, uint64_t nowNs, uint64_t fullLocateIntervalNs,
                            const topology::Topology& topo,
                            const std::function<bool(pid_t)>& exited, LocateTally& tally,
                            std::vector<std::string>& problems) {
  Entry& proc = entries_[pid];
  proc.readThisTick = false;
  proc.memoryReadThisTick = false;
  if (reusable(pid, proc, nowNs, fullLocateIntervalNs) && relocate(pid, proc, tally)) {
    ++tally.reused;
    // The moves plan on the read's VMAs, unchanged in maps, where it had no THP: no smaps walk.
    reads_.setLayout(pid, proc.smaps);  // set: reusable() checked it
    return;
  }
  proc.relocate.clear();      // the full read answers them
  proc.fullReadAtNs.reset();  // until a full read succeeds
  proc.readThisTick = true;
  if (readInFull(pid, proc, topo, exited, tally, problems)) proc.fullReadAtNs = nowNs;
}

bool LocationCache::relocate(pid_t pid, Entry& proc, LocateTally& tally) {
  if (proc.relocate.empty()) return true;
  auto located = migrator_.locatePages(pid, proc.relocate);
  if (!located) return false;  // the full read that follows says why
  heat_.setLocations(pid, regionNodes(proc.mappings, located->runs));
  tally.relocated += proc.relocate.size();
  proc.relocate.clear();
  return true;
}

bool LocationCache::readInFull(pid_t pid, Entry& proc, const topology::Topology& topo,
                               const std::function<bool(pid_t)>& exited, LocateTally& tally,
                               std::vector<std::string>& problems) {
  auto vmas = mappings_(pid);
  if (!vmas && exited(pid)) {
    proc.mappings.clear();  // nothing to plan; dropped (counted vanished) by the next scope pass
    heat_.setMappings(pid, proc.mappings);
    return false;
  }
  if (!vmas) {
    ++tally.errors;
    problems.push_back("pid " + std::to_string(pid) + ": " + vmas.error().describe());
    return false;
  }
  const uint64_t base = topo.caps.basePageSize ? topo.caps.basePageSize : 4096;
  const uint64_t pmd = topo.caps.pmdPageSize ? topo.caps.pmdPageSize : 2 * kMiB;
  // The one smaps read of this process this tick: locate() and execute() plan against it too.
  auto smaps = std::make_shared<const std::vector<sys::SmapsVma>>(std::move(vmas.value()));
  reads_.setSmaps(pid, smaps);
  proc.mappings = managedMappings(*smaps, base, pmd);
  heat_.setMappings(pid, proc.mappings);
  proc.smaps = smaps;

  std::vector<AddressRange> ranges;
  for (const policy::Mapping& m : proc.mappings)
    ranges.push_back({m.start, m.end - m.start});
  if (ranges.empty()) return true;
  // The one numa_maps read of this full read: the resident memory per node (memoryOf)
  // and locate()'s whole-VMA answers (ProcReads::setNumaMaps). Unreadable: locate() says why.
  if (auto numa = numaMaps_(pid)) {
    auto shared = std::make_shared<const std::vector<sys::NumaMapsVma>>(std::move(numa.value()));
    proc.memory = sys::residentMemory(*shared, base);
    proc.memoryReadThisTick = true;
    reads_.setNumaMaps(pid, std::move(shared));
  }
  auto located = migrator_.locate(pid, ranges);
  if (!located) {
    ++tally.errors;
    problems.push_back("locate pid " + std::to_string(pid) + ": " + located.error().describe());
    return false;
  }
  heat_.setLocations(pid, regionNodes(proc.mappings, located->runs));
  countSplitThps(proc, located->runs, pmd, tally);
  return true;
}

std::map<NodeId, sys::NodeMemory> LocationCache::memoryOf(const std::vector<pid_t>& pids,
                                                          uint64_t basePage) {
  std::map<NodeId, sys::NodeMemory> out;
  for (pid_t pid : pids) {
    Entry& proc = entries_[pid];
    // Read with the locations (by readInFull, else here), else reused with them.
    if ((proc.readThisTick && !proc.memoryReadThisTick) || !proc.memory) {
      proc.memory.reset();
      auto vmas = numaMaps_(pid);
      if (!vmas) continue;  // exited since the scope matched it: counted by the next refresh
      proc.memory = sys::residentMemory(vmas.value(), basePage);
    }
    for (const auto& [node, m] : *proc.memory) {
      out[node].anon += m.anon;
      out[node].file += m.file;
    }
  }
  return out;
}

void LocationCache::countSplitThps(Entry& proc, const std::vector<LocatedRun>& runs, uint64_t pmd,
                                   LocateTally& tally) {
  // Per VMA: chunks located on their target as base pages, and how far AnonHugePages fell.
  std::map<uint64_t, uint64_t> seen, fell;
  for (const auto& [chunk, moved] : proc.movedThp) {
    bool onTarget = false, base = false;
    for (const LocatedRun& run : runs) {
      if (run.start + run.length <= chunk || run.start >= chunk + pmd || run.status < 0) continue;
      onTarget = run.status == moved.target;
      base = base || run.pageSize < pmd;
      if (!onTarget) break;
    }
    if (!onTarget || !base) continue;
    ++seen[moved.vmaStart];
    const uint64_t after = proc.anonHugeAt(moved.vmaStart);
    fell[moved.vmaStart] = moved.anonHugeBefore > after ? (moved.anonHugeBefore - after) / pmd : 0;
  }
  for (const auto& [vma, n] : seen)
    tally.thpSplitAfterMove += std::min(n, fell[vma]);
  proc.movedThp.clear();
}

void LocationCache::rememberMovedThp(const MoveRange& m, uint64_t pmd) {
  auto it = entries_.find(m.pid);
  if (it == entries_.end() || m.pageSize != pmd) return;
  Entry& proc = it->second;
  for (const policy::Mapping& map : proc.mappings) {
    if (map.hugetlb || map.pageSize != pmd || m.start < map.start || m.start >= map.end) continue;
    const uint64_t anon = proc.anonHugeAt(map.start);
    for (uint64_t c = (m.start + pmd - 1) & ~(pmd - 1);
         c + pmd <= std::min(map.end, m.start + m.length); c += pmd)
      proc.movedThp[c] = {m.target, map.start, anon};
  }
}

void LocationCache::keep(const RangeResult& r) {
  auto it = entries_.find(r.range.pid);
  if (it == entries_.end()) return;
  Entry& proc = it->second;
  // Every page of the range answered by the kernel as now on the target (moved, or found there
  // by the status query) or as not present (-ENOENT, or -EFAULT for a zero page inside the
  // mapping: the holes an allocator leaves in its heap, mostly there at the full read already):
  // the heat model takes the target from the outcome (recordResults), so the full read's
  // locations stay true; the resident bytes per node follow the moved bytes. A range not reached
  // at all (the deadline or the rate budget came first) changed nothing. Anything else (a page
  // busy or refused, a range reached in part, or one with no page present) leaves the range's
  // pages where only the kernel knows: queried again alone next tick (refresh()),
  // or read in full with the rest where that query would not do (see tick(), "locate phase").
  const OutcomeCounts& o = r.outcomes;
  if (!r.dropped && o.total() > 0 && o[MoveOutcome::NotAttempted] == o.total()) return;
  const uint64_t placed = o[MoveOutcome::Moved] + o[MoveOutcome::AlreadyThere];
  const std::optional<NodeId> from = heat_.nodeOf(r.range.pid, r.range.start);
  if (r.dropped || !from || o[MoveOutcome::Gone] > 0) {
    proc.fullReadAtNs.reset();
    return;
  }
  if (!r.busy.empty() || placed == 0 || placed + o[MoveOutcome::NotPresent] != o.total()) {
    const policy::Mapping* m = mappingHolding(proc.mappings, r.range.start);
    uint64_t queued = r.range.length;
    for (const AddressRange& q : proc.relocate)
      queued += q.length;
    if (!m || m->hugetlb || queued > kRelocateMaxBytes) {
      proc.fullReadAtNs.reset();
      return;
    }
    proc.relocate.push_back({r.range.start, r.range.length});
  }
  if (!proc.memory || r.bytesMoved == 0 || *from == r.range.target) return;
  sys::NodeMemory& source = (*proc.memory)[*from];
  const uint64_t bytes = std::min(r.bytesMoved, source.anon);
  source.anon -= bytes;
  (*proc.memory)[r.range.target].anon += bytes;
}

}  // namespace tierd::daemon

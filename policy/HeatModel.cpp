#include "policy/HeatModel.h"

#include <algorithm>
#include <cmath>

#include "tierd/core/Units.h"

namespace tierd::policy {
namespace {

constexpr uint64_t kRegion = 2 * kMiB;

// Ordering for hottest(): heat descending, then pid, start.
bool hotter(const RegionView& a, const RegionView& b) {
  if (a.heat != b.heat) return a.heat > b.heat;
  if (a.pid != b.pid) return a.pid < b.pid;
  return a.start < b.start;
}

bool colder(const RegionView& a, const RegionView& b) {
  if (a.heat != b.heat) return a.heat < b.heat;
  if (a.pid != b.pid) return a.pid < b.pid;
  return a.start < b.start;
}

}  // namespace

size_t HeatModel::regionEntryBytes() {
  return sizeof(Region);
}

void HeatModel::setWorkload(WorkloadId id, HeatParams params) {
  auto it = workloads_.find(id);
  if (it != workloads_.end() && it->second.params.halfLifeNs != params.halfLifeNs) {
    // Fold heat with the old half-life so the new one applies from now on only.
    uint64_t now = 0;
    for (auto& [pid, p] : procs_)
      if (p.workload == id)
        for (Region& r : p.regions)
          now = std::max(now, r.updatedNs);
    for (auto& [pid, p] : procs_)
      if (p.workload == id)
        for (Region& r : p.regions) {
          r.heat = static_cast<float>(heatAt(r, now, it->second.params.halfLifeNs));
          r.updatedNs = now;
        }
  }
  workloads_[id].params = params;
}

void HeatModel::removeWorkload(WorkloadId id) {
  workloads_.erase(id);
  std::erase_if(procs_, [&](const auto& kv) { return kv.second.workload == id; });
}

void HeatModel::assignPid(pid_t pid, WorkloadId id) {
  auto it = procs_.find(pid);
  if (it != procs_.end() && it->second.workload == id) return;
  if (it != procs_.end()) procs_.erase(it);
  procs_[pid].workload = id;
}

void HeatModel::removePid(pid_t pid) {
  procs_.erase(pid);
}

bool HeatModel::setMappings(pid_t pid, std::vector<Mapping> mappings) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return false;
  std::sort(mappings.begin(), mappings.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  for (size_t i = 0; i < mappings.size(); ++i) {
    if (mappings[i].end <= mappings[i].start) return false;
    if (i > 0 && mappings[i].start < mappings[i - 1].end) return false;
  }
  Proc& p = it->second;
  p.mappings = std::move(mappings);
  p.mappings.shrink_to_fit();
  // Release regions that no longer overlap any mapping.
  std::erase_if(p.regions, [&](const Region& r) {
    uint64_t len = (r.flags & kGiant) ? kGiB : kRegion;
    auto m = std::upper_bound(p.mappings.begin(), p.mappings.end(), r.start,
                              [](uint64_t a, const Mapping& mm) { return a < mm.end; });
    return m == p.mappings.end() || m->start >= r.start + len;
  });
  return true;
}

const Mapping* HeatModel::findMapping(const Proc& p, uint64_t addr) const {
  auto m = std::upper_bound(p.mappings.begin(), p.mappings.end(), addr,
                            [](uint64_t a, const Mapping& mm) { return a < mm.end; });
  if (m == p.mappings.end() || m->start > addr) return nullptr;
  return &*m;
}

double HeatModel::heatAt(const Region& r, uint64_t nowNs, uint64_t halfLifeNs) const {
  if (nowNs <= r.updatedNs || r.heat == 0.0f) return r.heat;
  double dt = static_cast<double>(nowNs - r.updatedNs);
  return static_cast<double>(r.heat) * std::exp2(-dt / static_cast<double>(halfLifeNs));
}

HeatModel::Region* HeatModel::findRegion(Proc& p, uint64_t start) {
  auto it = std::lower_bound(p.regions.begin(), p.regions.end(), start,
                             [](const Region& r, uint64_t s) { return r.start < s; });
  return (it != p.regions.end() && it->start == start) ? &*it : nullptr;
}

std::optional<NodeId> HeatModel::nodeOf(pid_t pid, uint64_t start) const {
  auto p = procs_.find(pid);
  if (p == procs_.end()) return std::nullopt;
  const std::vector<Region>& regions = p->second.regions;
  auto it = std::lower_bound(regions.begin(), regions.end(), start,
                             [](const Region& r, uint64_t s) { return r.start < s; });
  if (it == regions.end() || it->start != start || it->node < 0) return std::nullopt;
  return it->node;
}

void HeatModel::insertRegions(Proc& p, std::vector<uint64_t> starts, uint64_t nowNs) {
  (void)nowNs;
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<Region> merged;
  merged.reserve(p.regions.size() + starts.size());  // exact: no growth slack
  size_t i = 0;
  for (uint64_t s : starts) {
    while (i < p.regions.size() && p.regions[i].start < s)
      merged.push_back(p.regions[i++]);
    if (i < p.regions.size() && p.regions[i].start == s) continue;
    const Mapping* m = findMapping(p, s);
    uint8_t flags = (m && m->hugetlb && m->pageSize >= kGiB) ? kGiant : 0;
    merged.push_back(Region{s, 0, 0, 0.0f, -1, flags, 0});
  }
  while (i < p.regions.size())
    merged.push_back(p.regions[i++]);
  p.regions = std::move(merged);
}

void HeatModel::ingest(std::span<const AccessSample> batch, uint64_t nowNs, bool useWeight,
                       TickSpan span) {
  std::vector<size_t> misses;
  pid_t lastPid = -1;
  Proc* proc = nullptr;
  uint64_t halfLife = 1;
  double spanFactor = 1.0;  // TickSpan's geometric sum for this workload's half-life
  const bool spanned = useWeight && span.ticks > 1.0 && span.tickNs > 0;
  // Returns the region start for a sample, or false when it falls outside the mappings.
  auto startFor = [&](const Proc& p, uint64_t vaddr, uint64_t& start) {
    if (p.mappings.empty()) {
      start = vaddr & ~(kRegion - 1);
      return true;
    }
    const Mapping* m = findMapping(p, vaddr);
    if (!m) return false;
    uint64_t size = (m->hugetlb && m->pageSize >= kGiB) ? m->pageSize : kRegion;
    start = vaddr & ~(size - 1);
    return true;
  };
  auto apply = [&](Region& r, const AccessSample& s) {
    uint64_t t = s.timeNs == 0 ? nowNs : std::clamp(s.timeNs, std::min(r.updatedNs, nowNs), nowNs);
    double h = heatAt(r, t, halfLife);
    r.heat = static_cast<float>(h + (useWeight ? static_cast<double>(s.weight) * spanFactor : 1.0));
    r.updatedNs = std::max(r.updatedNs, t);
    ++ingestStats_.samples;
  };
  auto select = [&](pid_t pid) {
    if (pid == lastPid) return;
    lastPid = pid;
    auto it = procs_.find(pid);
    proc = nullptr;
    if (it == procs_.end()) return;
    auto w = workloads_.find(it->second.workload);
    if (w == workloads_.end()) return;
    proc = &it->second;
    halfLife = std::max<uint64_t>(1, w->second.params.halfLifeNs);
    if (spanned) {
      const double step = static_cast<double>(span.tickNs) / static_cast<double>(halfLife);
      spanFactor = (1.0 - std::exp2(-span.ticks * step)) / (1.0 - std::exp2(-step));
    }
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    select(s.pid);
    if (!proc) {
      ++ingestStats_.unknownPid;
      continue;
    }
    uint64_t start = 0;
    if (!startFor(*proc, s.vaddr, start)) {
      ++ingestStats_.outsideMappings;
      continue;
    }
    if (Region* r = findRegion(*proc, start))
      apply(*r, s);
    else
      misses.push_back(i);
  }
  if (misses.empty()) return;
  std::map<pid_t, std::vector<uint64_t>> fresh;
  for (size_t i : misses) {
    uint64_t start = 0;
    select(batch[i].pid);
    startFor(*proc, batch[i].vaddr, start);
    fresh[batch[i].pid].push_back(start);
  }
  for (auto& [pid, starts] : fresh)
    insertRegions(procs_[pid], std::move(starts), nowNs);
  lastPid = -1;
  for (size_t i : misses) {
    uint64_t start = 0;
    select(batch[i].pid);
    startFor(*proc, batch[i].vaddr, start);
    apply(*findRegion(*proc, start), batch[i]);
  }
}

bool HeatModel::isHeld(const Proc& p, const Region& r, uint64_t nowNs) const {
  if (!(r.flags & kHeld)) return false;
  auto w = workloads_.find(p.workload);
  uint64_t cooldown = w == workloads_.end() ? 0 : w->second.params.cooldownNs;
  return nowNs < r.lastMoveNs + 16 * cooldown;
}

void HeatModel::decay(uint64_t nowNs) {
  for (auto& [pid, p] : procs_) {
    auto w = workloads_.find(p.workload);
    if (w == workloads_.end()) continue;
    const HeatParams& params = w->second.params;
    for (Region& r : p.regions) {
      r.heat = static_cast<float>(heatAt(r, nowNs, std::max<uint64_t>(1, params.halfLifeNs)));
      r.updatedNs = std::max(r.updatedNs, nowNs);
      if ((r.flags & kHeld) && !isHeld(p, r, nowNs)) {
        r.flags &= static_cast<uint8_t>(~kHeld);
        r.flips = 0;
      }
    }
    std::erase_if(p.regions, [&](const Region& r) {
      bool recent = r.lastMoveNs != 0 && nowNs < r.lastMoveNs + 16 * params.cooldownNs;
      return r.node < 0 && r.heat < kForgetHeat && !(r.flags & kHeld) && !recent;
    });
    if (p.regions.capacity() > 2 * p.regions.size() + 16) p.regions.shrink_to_fit();
  }
}

// By value: the first loop aligns each start in place, for the second (clang-tidy 14 does not
// see writes through a structured binding).
// NOLINTNEXTLINE(performance-unnecessary-value-param)
void HeatModel::setLocations(pid_t pid, std::vector<std::pair<uint64_t, NodeId>> regionNodes) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  Proc& p = it->second;
  std::vector<uint64_t> missing;
  for (auto& [start, node] : regionNodes) {
    const Mapping* m = p.mappings.empty() ? nullptr : findMapping(p, start);
    if (!p.mappings.empty() && !m) continue;
    uint64_t size = (m && m->hugetlb && m->pageSize >= kGiB) ? m->pageSize : kRegion;
    start &= ~(size - 1);
    if (!findRegion(p, start)) missing.push_back(start);
  }
  if (!missing.empty()) insertRegions(p, std::move(missing), 0);
  for (auto& [start, node] : regionNodes)
    if (Region* r = findRegion(p, start)) r->node = static_cast<int16_t>(node);
}

void HeatModel::recordResults(std::span<const RangeOutcome> outcomes, uint64_t nowNs) {
  for (const RangeOutcome& o : outcomes) {
    auto it = procs_.find(o.pid);
    if (it == procs_.end()) continue;
    Proc& p = it->second;
    auto w = workloads_.find(p.workload);
    uint64_t cooldown = w == workloads_.end() ? 0 : w->second.params.cooldownNs;
    switch (o.result) {
      case MoveOutcome::Moved:
        ++recordStats_.moved;
        break;
      case MoveOutcome::AlreadyThere:
        ++recordStats_.moved;
        break;
      case MoveOutcome::Busy:
        ++recordStats_.busy;
        break;
      case MoveOutcome::Gone:
        ++recordStats_.gone;
        break;
      case MoveOutcome::NoMemory:
        ++recordStats_.noMemory;
        break;
      case MoveOutcome::Denied:
        ++recordStats_.denied;
        break;
      case MoveOutcome::NodeNotAllowed:
        ++recordStats_.notAllowed;
        break;
      case MoveOutcome::NotPresent:
      case MoveOutcome::NotMigrated:
      case MoveOutcome::OtherError:
      case MoveOutcome::NotAttempted:
        break;  // dominantOutcome never gives these
    }
    const PolicyReaction reaction = moveOutcomeInfo(o.result).reaction;
    if (reaction == PolicyReaction::Drop) {
      std::erase_if(p.regions, [&](const Region& r) {
        return r.start >= o.start && r.start < o.start + o.length;
      });
      continue;
    }
    auto first = std::lower_bound(p.regions.begin(), p.regions.end(), o.start,
                                  [](const Region& r, uint64_t s) { return r.start < s; });
    // A range clipped to a mapping may start inside its region: include that region.
    if (first != p.regions.begin() && (first == p.regions.end() || first->start > o.start)) {
      auto prev = first - 1;
      uint64_t len = (prev->flags & kGiant) ? kGiB : kRegion;
      if (prev->start + len > o.start) first = prev;
    }
    for (auto r = first; r != p.regions.end() && r->start < o.start + o.length; ++r) {
      switch (reaction) {
        case PolicyReaction::Placed:
          r->node = static_cast<int16_t>(o.target);
          r->flags &= static_cast<uint8_t>((1u << kBusyShift) - 1);  // busy back-off ends
          break;
        case PolicyReaction::Moved: {
          bool promote = o.direction == Direction::Promote;
          if (r->flags & kMovedOnce) {
            bool reversed = ((r->flags & kLastPromote) != 0) != promote;
            bool recent = nowNs < r->lastMoveNs + 4 * cooldown;
            r->flips = reversed && recent ? static_cast<uint8_t>(std::min(r->flips + 1, 255)) : 0;
          }
          r->node = static_cast<int16_t>(o.target);
          r->lastMoveNs = nowNs;
          // Busy back-off ends (bits 4-7 cleared) on success.
          r->flags = static_cast<uint8_t>((r->flags & ~kLastPromote & ((1u << kBusyShift) - 1)) |
                                          kMovedOnce | (promote ? kLastPromote : 0));
          if (r->flips >= kPingPongFlips && !(r->flags & kHeld)) {
            r->flags |= kHeld;
            ++recordStats_.pingPongHeld;
          }
          break;
        }
        case PolicyReaction::BackOff: {
          r->lastMoveNs = nowNs;
          const int n = std::min(busyStreak(*r) + 1, kMaxBusyDoublings + 1);
          r->flags =
              static_cast<uint8_t>((r->flags & ((1u << kBusyShift) - 1)) | (n << kBusyShift));
          break;
        }
        case PolicyReaction::Hold:
          r->lastMoveNs = nowNs;
          r->flags |= kHeld;
          break;
        case PolicyReaction::Drop:
        case PolicyReaction::Count:
        case PolicyReaction::None:
          break;
      }
    }
  }
}

RegionView HeatModel::view(pid_t pid, const Proc& p, const Region& r, uint64_t nowNs) const {
  RegionView v;
  v.pid = pid;
  auto w = workloads_.find(p.workload);
  uint64_t halfLife =
      w == workloads_.end() ? 1 : std::max<uint64_t>(1, w->second.params.halfLifeNs);
  v.heat = heatAt(r, nowNs, halfLife);
  v.node = r.node;
  v.lastMoveNs = r.lastMoveNs;
  v.held = isHeld(p, r, nowNs);
  if (const int n = busyStreak(r); n > 0) {
    const uint64_t cooldown = w == workloads_.end() ? 0 : w->second.params.cooldownNs;
    v.retryAtNs = r.lastMoveNs + (cooldown << (n - 1));
  }
  uint64_t len = (r.flags & kGiant) ? kGiB : kRegion;
  v.start = r.start;
  v.length = len;
  v.pageSize = kRegion;
  if (!p.mappings.empty()) {
    auto m = std::upper_bound(p.mappings.begin(), p.mappings.end(), r.start,
                              [](uint64_t a, const Mapping& mm) { return a < mm.end; });
    if (m != p.mappings.end() && m->start < r.start + len) {
      uint64_t s = std::max(r.start, m->start), e = std::min(r.start + len, m->end);
      v.start = s;
      v.length = e - s;
      v.pageSize = m->pageSize;
      v.hugetlb = m->hugetlb;
    }
  }
  return v;
}

std::vector<RegionView> HeatModel::regions(WorkloadId id, uint64_t nowNs) const {
  std::vector<RegionView> out;
  for (const auto& [pid, p] : procs_)
    if (p.workload == id)
      for (const Region& r : p.regions)
        out.push_back(view(pid, p, r, nowNs));
  return out;
}

std::vector<RegionView> HeatModel::hottest(WorkloadId id, const std::vector<NodeId>& nodes,
                                           size_t limit, uint64_t nowNs) const {
  std::vector<RegionView> all = regions(id, nowNs);
  std::erase_if(all, [&](const RegionView& v) {
    return std::find(nodes.begin(), nodes.end(), v.node) == nodes.end();
  });
  size_t n = std::min(limit, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n), all.end(), hotter);
  all.resize(n);
  return all;
}

std::vector<RegionView> HeatModel::coldest(WorkloadId id, const std::vector<NodeId>& nodes,
                                           size_t limit, uint64_t nowNs) const {
  std::vector<RegionView> all = regions(id, nowNs);
  std::erase_if(all, [&](const RegionView& v) {
    return std::find(nodes.begin(), nodes.end(), v.node) == nodes.end();
  });
  size_t n = std::min(limit, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(n), all.end(), colder);
  all.resize(n);
  return all;
}

size_t HeatModel::regionCount() const {
  size_t n = 0;
  for (const auto& [pid, p] : procs_)
    n += p.regions.size();
  return n;
}

size_t HeatModel::modelBytes() const {
  constexpr size_t kMapNode = 48;  // red-black tree node header + allocator overhead, estimated
  size_t bytes = sizeof(*this);
  for (const auto& [pid, p] : procs_)
    bytes += kMapNode + sizeof(pid_t) + sizeof(Proc) + p.regions.capacity() * sizeof(Region) +
             p.mappings.capacity() * sizeof(Mapping);
  bytes += workloads_.size() * (kMapNode + sizeof(WorkloadId) + sizeof(Workload));
  return bytes;
}

uint64_t HeatModel::trackedBytes() const {
  uint64_t b = 0;
  for (const auto& [pid, p] : procs_)
    for (const Region& r : p.regions)
      b += (r.flags & kGiant) ? kGiB : kRegion;
  return b;
}

}  // namespace tierd::policy

#include "tierd/simulate/ModelKernelMigrator.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace tierd::migrate {
namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string statusList(const int* status, uint64_t n) {
  std::string out;
  constexpr uint64_t kMax = 16;
  for (uint64_t i = 0; i < n && i < kMax; ++i) {
    if (i) out += ",";
    out += status[i] == INT32_MIN ? std::string("?") : std::to_string(status[i]);
  }
  if (n > kMax) out += ",...";
  return out;
}

}  // namespace

FakePageSystem::FakePageSystem(uint64_t basePageSize, uint64_t thpSize)
    : base_(basePageSize), thp_(thpSize) {}

void FakePageSystem::map(pid_t pid, uint64_t start, uint64_t length, FakeBacking backing,
                         uint64_t hugePageSize) {
  Vma v;
  v.start = start;
  v.end = start + length;
  v.backing = backing;
  v.pageSize = backing == FakeBacking::Base  ? base_
               : backing == FakeBacking::Thp ? thp_
                                             : hugePageSize;
  procs_[pid].vmas[start] = v;
}

const FakePageSystem::Vma* FakePageSystem::findVma(const Proc& p, uint64_t addr) const {
  auto it = p.vmas.upper_bound(addr);
  if (it == p.vmas.begin()) return nullptr;
  --it;
  return addr < it->second.end ? &it->second : nullptr;
}

uint64_t FakePageSystem::pageSizeAt(const Proc& p, const Vma& v, uint64_t addr) const {
  if (v.backing == FakeBacking::Thp && p.split.count(addr / thp_ * thp_)) return base_;
  return v.pageSize;
}

void FakePageSystem::splitThp(pid_t pid, uint64_t addr) {
  Proc& p = procs_[pid];
  const Vma* v = findVma(p, addr);
  const uint64_t chunk = addr / thp_ * thp_;
  if (!v || v->backing != FakeBacking::Thp || p.split.count(chunk)) return;
  auto it = p.pages.find(chunk);
  if (it == p.pages.end()) return;
  const NodeId node = it->second;
  p.split.insert(chunk);
  for (uint64_t a = chunk; a < chunk + thp_; a += base_)
    p.pages[a] = node;
  log_.push_back("split pid=" + std::to_string(pid) + " " + hex(chunk));
}

void FakePageSystem::dropPage(pid_t pid, uint64_t addr) {
  splitThp(pid, addr);
  procs_[pid].pages.erase(addr / base_ * base_);
  log_.push_back("drop pid=" + std::to_string(pid) + " " + hex(addr / base_ * base_));
}

void FakePageSystem::populate(pid_t pid, uint64_t start, uint64_t length, NodeId node) {
  Proc& p = procs_[pid];
  for (uint64_t a = start; a < start + length;) {
    const Vma* v = findVma(p, a);
    if (!v) {
      a += base_;
      continue;
    }
    uint64_t page = pageStart(p, *v, a);
    p.pages[page] = node;
    a = page + pageSizeAt(p, *v, a);
  }
}

void FakePageSystem::setCapacity(NodeId node, uint64_t pageSize, uint64_t freePages) {
  capacity_[{node, pageSize}] = freePages;
}

void FakePageSystem::setNodes(std::set<NodeId> nodes) {
  nodes_ = std::move(nodes);
}

void FakePageSystem::scriptPageError(pid_t pid, uint64_t addr, int err, int times) {
  const Proc& p = procs_[pid];
  const Vma* v = findVma(p, addr);
  uint64_t page = v ? pageStart(p, *v, addr) : addr;
  errors_[{pid, page}] = {err, times};
}

void FakePageSystem::scriptPartialReturn(uint64_t moveCall, uint64_t processed) {
  partial_[moveCall] = processed;
}

void FakePageSystem::beforeCall(uint64_t call, std::function<void()> action) {
  before_[call].push_back(std::move(action));
}

void FakePageSystem::exitPid(pid_t pid) {
  Proc& p = procs_[pid];
  p.exited = true;
  p.vmas.clear();
  p.pages.clear();
  log_.push_back("exit pid=" + std::to_string(pid));
}

void FakePageSystem::reusePid(pid_t pid) {
  procs_[pid] = Proc{};
  for (auto it = errors_.begin(); it != errors_.end();)
    it = it->first.first == pid ? errors_.erase(it) : std::next(it);
  log_.push_back("reuse pid=" + std::to_string(pid));
}

void FakePageSystem::zombiePid(pid_t pid) {
  Proc& p = procs_[pid];
  p.zombie = true;
  p.vmas.clear();
  p.pages.clear();
  log_.push_back("zombie pid=" + std::to_string(pid));
}

void FakePageSystem::unmap(pid_t pid, uint64_t start, uint64_t length) {
  Proc& p = procs_[pid];
  const uint64_t end = start + length;
  std::map<uint64_t, Vma> kept;
  for (const auto& [s, v] : p.vmas) {
    if (v.end <= start || v.start >= end) {
      kept[s] = v;
      continue;
    }
    if (v.start < start) {
      Vma left = v;
      left.end = start;
      kept[left.start] = left;
    }
    if (v.end > end) {
      Vma right = v;
      right.start = end;
      kept[right.start] = right;
    }
  }
  p.vmas = std::move(kept);
  for (auto it = p.pages.begin(); it != p.pages.end();)
    it = (it->first >= start && it->first < end) ? p.pages.erase(it) : std::next(it);
  log_.push_back("unmap pid=" + std::to_string(pid) + " " + hex(start) + "+" + hex(length));
}

std::optional<NodeId> FakePageSystem::nodeOf(pid_t pid, uint64_t addr) const {
  auto pit = procs_.find(pid);
  if (pit == procs_.end()) return std::nullopt;
  const Vma* v = findVma(pit->second, addr);
  if (!v) return std::nullopt;
  auto it = pit->second.pages.find(pageStart(pit->second, *v, addr));
  if (it == pit->second.pages.end()) return std::nullopt;
  return it->second;
}

bool FakePageSystem::sleepUntilNs(int64_t ns, const std::atomic<bool>* stop) {
  if (ns <= now_) return true;
  const int64_t from = now_;
  while (stop && now_ < ns) {
    if (stop->load(std::memory_order_relaxed)) {
      log_.push_back("sleep " + std::to_string(now_ - from) + "ns of " + std::to_string(ns - from) +
                     "ns: stopped");
      return false;
    }
    now_ = std::min(ns, now_ + kStopPollNs);
    if (duringSleep) duringSleep(now_);
  }
  log_.push_back("sleep " + std::to_string(ns - from) + "ns");
  now_ = ns;
  return true;
}

long FakePageSystem::movePages(pid_t pid, uint64_t count, void** pages, const int* nodes,
                               int* status, int flags) {
  (void)flags;
  const uint64_t callNo = calls_++;
  if (auto it = before_.find(callNo); it != before_.end())
    for (auto& action : it->second)
      action();
  const bool query = nodes == nullptr;
  std::string line = std::string(query ? "query" : "move") + " pid=" + std::to_string(pid) +
                     " n=" + std::to_string(count) +
                     (count ? " first=" + hex(reinterpret_cast<uint64_t>(pages[0])) : "");
  if (!query && count) line += " to=" + std::to_string(nodes[0]);
  int64_t cost = nsPerCall + nsPerAddress * static_cast<int64_t>(count);
  auto finish = [&](long ret) {
    now_ += cost;
    cpu_ += cost;
    line += " -> " + std::to_string(ret);
    if (ret >= 0) line += " [" + statusList(status, count) + "]";
    log_.push_back(line);
    return ret;
  };
  Proc& p = procs_[pid];
  if (p.exited) return finish(-ESRCH);
  if (p.zombie) return finish(-EINVAL);
  if (query) {
    statPages(p, count, pages, status);
    return finish(0);
  }
  return finish(doPagesMove(pid, p, count, pages, nodes, status, cost));
}

// mm/migrate.c do_pages_stat_array.
void FakePageSystem::statPages(const Proc& p, uint64_t count, void** pages, int* status) const {
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t addr = reinterpret_cast<uint64_t>(pages[i]);
    const Vma* v = findVma(p, addr);
    if (!v) {
      status[i] = -EFAULT;
      continue;
    }
    auto pit = p.pages.find(pageStart(p, *v, addr));
    if (pit != p.pages.end())
      status[i] = pit->second;
    else
      status[i] = p.zeroPages.count(addr / base_ * base_) ? -EFAULT : -ENOENT;
  }
}

// mm/migrate.c do_pages_move: entries are taken in order; consecutive entries with the same
// target node form a node group whose pages are queued (add_folio_for_migration) and migrated
// together (move_pages_and_store_status -> do_move_pages_to_node -> migrate_pages) when the
// group ends: at a different node, at an entry that is not queued (already there or an error,
// whose status is stored at once), or at the end. The first call-level error returns at once:
// a bad node (-ENODEV), a node outside the task's cpuset.mems_allowed (-EACCES; the pending
// group is flushed first, out_flush), or a group whose migration failed. migrate_pages() gives
// up at the first page it cannot allocate on the target and returns -ENOMEM: the pages before
// it stay moved, the group's statuses are not stored (store_status runs only on success) and
// later groups are not attempted. The kernel never stores a per-page -ENOMEM.
long FakePageSystem::doPagesMove(pid_t pid, Proc& p, uint64_t count, void** pages, const int* nodes,
                                 int* status, int64_t& cost) {
  const uint64_t moveNo = moveCalls_++;
  uint64_t limit = count;
  if (auto it = partial_.find(moveNo); it != partial_.end()) limit = std::min(count, it->second);
  MoveGroup group;
  std::set<uint64_t> handled;  // huge pages already queued or handled by this call
  long err = 0;
  for (uint64_t i = 0; i < limit; ++i) {
    const NodeId node = nodes[i];
    if (nodes_ && !nodes_->count(node)) {
      err = -ENODEV;
      break;
    }
    if (p.memsAllowed && !p.memsAllowed->count(node)) {
      err = -EACCES;
      break;
    }
    if (node != group.node && !group.pages.empty())
      if (long e = migrateGroup(group, status, cost); e != 0) return e;
    group.node = node;
    MoveGroup::Queued q{i, {}, 0};
    const int added = addFolio(pid, p, reinterpret_cast<uint64_t>(pages[i]), node, handled, q);
    if (added > 0) {
      group.pages.push_back(q);
      continue;
    }
    status[i] = added < 0 ? added : node;
    if (long e = migrateGroup(group, status, cost); e != 0) return e;
  }
  const long e1 = migrateGroup(group, status, cost);
  if (err == 0) err = e1;
  if (err == 0) err = static_cast<long>(count - limit);
  return err;
}

int FakePageSystem::addFolio(pid_t pid, Proc& p, uint64_t addr, NodeId node,
                             std::set<uint64_t>& handled, MoveGroup::Queued& q) {
  const Vma* v = findVma(p, addr);
  if (!v) return -EFAULT;
  const uint64_t page = pageStart(p, *v, addr);
  auto pit = p.pages.find(page);
  if (pit == p.pages.end()) return p.zeroPages.count(addr / base_ * base_) ? -EFAULT : -ENOENT;
  if (pageSizeAt(p, *v, addr) > base_ && !handled.insert(page).second)
    return -EBUSY;  // a later subpage address of a huge page handled in this call
  if (auto eit = errors_.find({pid, page}); eit != errors_.end() && eit->second.times != 0) {
    const int err = eit->second.err;
    if (eit->second.times > 0) --eit->second.times;
    return -err;
  }
  if (pit->second == node) return 0;
  q.page = pit;
  q.pageSize = pageSizeAt(p, *v, addr);
  return 1;
}

long FakePageSystem::migrateGroup(MoveGroup& group, int* status, int64_t& cost) {
  for (const MoveGroup::Queued& q : group.pages) {
    auto cap = capacity_.find({group.node, q.pageSize});
    if (cap != capacity_.end()) {
      if (cap->second == 0) {
        group.pages.clear();
        return -ENOMEM;
      }
      --cap->second;
    }
    auto src = capacity_.find({q.page->second, q.pageSize});
    if (src != capacity_.end()) ++src->second;
    q.page->second = group.node;
    cost += nsPerByteMoved * static_cast<int64_t>(q.pageSize);
  }
  for (const MoveGroup::Queued& q : group.pages)
    status[q.index] = group.node;
  group.pages.clear();
  return 0;
}

Result<std::set<NodeId>> FakePageSystem::memsAllowed(pid_t pid) {
  auto pit = procs_.find(pid);
  if (pit == procs_.end() || pit->second.exited)
    return Error::sys(ENOENT, "cannot open", "/proc/" + std::to_string(pid) + "/status");
  if (pit->second.memsAllowed) return *pit->second.memsAllowed;
  std::set<NodeId> all;
  for (NodeId n = 0; n < 64; ++n)
    all.insert(n);
  return all;
}

void FakePageSystem::mapZeroPage(pid_t pid, uint64_t addr) {
  procs_[pid].zeroPages.insert(addr / base_ * base_);
}

Result<std::vector<uint64_t>> FakePageSystem::pagemap(pid_t pid, uint64_t start, uint64_t pages) {
  auto pit = procs_.find(pid);
  const std::string where = "/proc/" + std::to_string(pid) + "/pagemap";
  if (pit == procs_.end() || pit->second.exited) return Error::sys(ENOENT, "cannot open", where);
  log_.push_back("pagemap pid=" + std::to_string(pid) + " " + hex(start) +
                 " n=" + std::to_string(pages));
  std::vector<uint64_t> out(pages, 0);
  for (uint64_t i = 0; i < pages; ++i) {
    const uint64_t a = start + i * base_;
    const auto node = nodeOf(pid, a);
    if (!node && !pit->second.zeroPages.count(a)) continue;
    out[i] = migrate::kPagemapPresent;
    if (pfns_ == Pfns::None) continue;
    if (node && !pit->second.sharedPages.count(a)) out[i] |= migrate::kPagemapExclusive;
    if (pfns_ == Pfns::Hidden) continue;
    // The zero page's frame is 1 (block 0); a page's frame is in its node's block.
    out[i] |=
        node ? static_cast<uint64_t>(*node + 1) * kPfnsPerBlock + (a / base_) % kPfnsPerBlock : 1;
  }
  return out;
}

Result<sys::MemoryBlockNodes> FakePageSystem::memoryBlockNodes() {
  ++blockMapReads_;
  if (pfns_ == Pfns::None) return Error::env("no memory block map", "FakePageSystem");
  sys::MemoryBlockNodes m;
  m.blockBytes = kPfnsPerBlock * base_;
  for (NodeId n : nodes_ ? *nodes_ : std::set<NodeId>{0, 1}) {
    if (ambiguousBlock_ == n)
      ++m.ambiguousBlocks;
    else
      m.nodeOfBlock[static_cast<uint64_t>(n) + 1] = n;
  }
  return m;
}

Result<std::vector<sys::SmapsVma>> FakePageSystem::render(pid_t pid, bool counters) {
  auto pit = procs_.find(pid);
  const std::string where = "/proc/" + std::to_string(pid) + (counters ? "/smaps" : "/maps");
  if (pit == procs_.end() || pit->second.exited) return Error::sys(ENOENT, "cannot open", where);
  std::vector<sys::SmapsVma> out;
  for (const auto& [s, v] : pit->second.vmas) {
    sys::SmapsVma m;
    m.start = v.start;
    m.end = v.end;
    m.perms = "rw-p";
    m.dev = "00:00";
    if (v.backing == FakeBacking::Hugetlb) m.path = "/anon_hugepage (deleted)";
    if (counters) {
      m.hasCounters = true;
      uint64_t present = 0, presentBytes = 0, thpBytes = 0;
      for (auto it = pit->second.pages.lower_bound(v.start);
           it != pit->second.pages.end() && it->first < v.end; ++it) {
        const uint64_t size = pageSizeAt(pit->second, v, it->first);
        ++present;
        presentBytes += size;
        if (size == thp_ && v.backing == FakeBacking::Thp) thpBytes += size;
      }
      m.kernelPageSize = v.backing == FakeBacking::Hugetlb ? v.pageSize : base_;
      m.mmuPageSize = m.kernelPageSize;
      if (v.backing == FakeBacking::Hugetlb) {
        m.vmFlags = {"rd", "wr", "ht"};
        m.fields["Private_Hugetlb"] = present * v.pageSize;
      } else {
        m.vmFlags = {"rd", "wr"};
        m.rss = presentBytes;
        m.anonHugePages = thpBytes;
      }
      m.fields["Rss"] = m.rss;
      m.fields["AnonHugePages"] = m.anonHugePages;
      m.fields["KernelPageSize"] = m.kernelPageSize;
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<sys::SmapsVma>> FakePageSystem::maps(pid_t pid) {
  ++mapsReads_;
  return render(pid, false);
}
Result<std::vector<sys::SmapsVma>> FakePageSystem::smaps(pid_t pid) {
  ++smapsReads_;
  return render(pid, true);
}

Result<std::vector<sys::NumaMapsVma>> FakePageSystem::numaMaps(pid_t pid) {
  ++numaMapsReads_;
  auto pit = procs_.find(pid);
  if (pit == procs_.end() || pit->second.exited)
    return Error::sys(ENOENT, "cannot open", "/proc/" + std::to_string(pid) + "/numa_maps");
  std::vector<sys::NumaMapsVma> out;
  for (const auto& [s, v] : pit->second.vmas) {
    sys::NumaMapsVma n;
    n.start = v.start;
    n.policy = "default";
    n.huge = v.backing == FakeBacking::Hugetlb;
    // THP is counted in base pages (like the kernel); hugetlb in huge pages.
    const uint64_t unit = n.huge ? v.pageSize : base_;
    for (auto it = pit->second.pages.lower_bound(v.start);
         it != pit->second.pages.end() && it->first < v.end; ++it)
      n.pagesPerNode[it->second] += pageSizeAt(pit->second, v, it->first) / unit;
    if (!n.pagesPerNode.empty()) n.kernelPageSize = unit;
    out.push_back(std::move(n));
  }
  return out;
}

ModelKernelMigrator::ModelKernelMigrator(MigratorConfig config, uint64_t basePageSize,
                                         uint64_t thpSize)
    : ModelKernelMigrator(config, std::make_unique<FakePageSystem>(basePageSize, thpSize)) {}

ModelKernelMigrator::ModelKernelMigrator(MigratorConfig config,
                                         std::unique_ptr<FakePageSystem> kernel)
    : kernel_(kernel.get()), engine_(config, std::move(kernel), reads_) {}

}  // namespace tierd::migrate

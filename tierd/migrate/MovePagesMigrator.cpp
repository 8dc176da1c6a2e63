#include "tierd/migrate/MovePagesMigrator.h"

#include <numaif.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <optional>
#include <string>

namespace tierd::migrate {
namespace {

constexpr int kUntouched = INT_MIN;  // status value the kernel never writes

uint64_t alignDown(uint64_t v, uint64_t a) {
  return v / a * a;
}
uint64_t alignUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}
uint64_t ceilDiv(uint64_t v, uint64_t a) {
  return (v + a - 1) / a;
}

size_t dirIndex(Direction d) {
  return d == Direction::Promote ? 0 : 1;
}

}  // namespace

struct MovePagesMigrator::BatchState {
  const std::vector<MoveRange>* batch = nullptr;
  BatchResult result;
  std::vector<Segment> segments;
  std::map<pid_t, Result<SmapsSnapshot>> smaps;  // per pid: read once per execute()
  std::map<pid_t, PidState> pids;
  std::set<std::pair<uint64_t, NodeId>> blocked;  // (page size, node) that returned -ENOMEM
  // Per pid: Mems_allowed read at planning (nullopt: could not be read, send anyway), and the
  // targets that failed a move call with -EACCES in this batch.
  std::map<pid_t, std::optional<std::set<NodeId>>> memsAllowed;
  std::set<std::pair<pid_t, NodeId>> notAllowed;
  // Targets that failed a move call with -ENODEV in this batch (no memory: offlined).
  std::set<NodeId> offline;
  std::vector<PageRef> busy;
  std::set<uint64_t> movedHeads;  // chunk heads of partly huge VMAs that Moved (counted as THP)
  std::set<uint64_t> baseChunks;  // such chunks found to hold base pages (a tail not on target)
  const std::atomic<bool>* stop = nullptr;
  std::vector<bool> halted;  // per range: stop sending its pages (-EFAULT, process gone/denied)
  int64_t deadlineNs = 0;

  const MoveRange& range(size_t i) const { return (*batch)[i]; }
  bool nodeNotAllowed(pid_t pid, NodeId node) const {
    if (notAllowed.count({pid, node})) return true;
    auto it = memsAllowed.find(pid);
    return it != memsAllowed.end() && it->second && !it->second->count(node);
  }
  void add(size_t i, MoveOutcome o, uint64_t n) { result.ranges[i].outcomes[o] += n; }
  void dropPid(pid_t pid) {
    for (size_t i = 0; i < batch->size(); ++i)
      if ((*batch)[i].pid == pid) {
        result.ranges[i].dropped = true;
        halted[i] = true;
      }
  }
};

MovePagesMigrator::MovePagesMigrator(MigratorConfig config, std::unique_ptr<PageSystem> system,
                                     std::shared_ptr<const ProcReads> reads)
    : config_(config),
      sys_(system ? std::move(system) : makeLinuxPageSystem()),
      reads_(std::move(reads)) {}

Result<MovePagesMigrator::SmapsSnapshot> MovePagesMigrator::smapsOf(pid_t pid) {
  if (reads_)
    if (SmapsSnapshot shared = reads_->smaps(pid)) return shared;
  auto read = sys_->smaps(pid);
  if (!read) return read.error();
  return SmapsSnapshot(std::make_shared<const std::vector<sys::SmapsVma>>(std::move(read.value())));
}

uint64_t MovePagesMigrator::bytesPerCall() const {
  uint64_t bytes = 1;
  if (nsPerByte_ <= 0) {
    bytes = config_.initialBytesPerCall;
  } else {
    const double b = static_cast<double>(config_.callLatencyTargetNs) / nsPerByte_;
    if (b > 1e15)
      bytes = static_cast<uint64_t>(1e15);
    else if (b >= 1)
      bytes = static_cast<uint64_t>(b);
  }
  return std::max<uint64_t>({bytes, config_.minBytesPerCall, 1});
}

void MovePagesMigrator::planRange(BatchState& st, size_t index) {
  const MoveRange& r = st.range(index);
  RangeResult& rr = st.result.ranges[index];
  if (r.length == 0) return;
  const uint64_t base = sys_->basePageSize();
  const uint64_t unit = r.pageSize ? r.pageSize : base;
  PidState& ps = st.pids.try_emplace(r.pid, PidState::Ok).first->second;
  if (ps != PidState::Ok) {
    st.add(index, ps == PidState::Gone ? MoveOutcome::Gone : MoveOutcome::Denied,
           ceilDiv(r.length, unit));
    rr.dropped = true;
    return;
  }
  // The VMAs to plan on: an older layout when it suffices (ProcReads::layout), else the
  // tick's smaps read or one read per pid and execute().
  const std::vector<sys::SmapsVma>* planned = layoutFor(r);
  const bool fromLayout = planned != nullptr;
  if (!planned) {
    auto it = st.smaps.find(r.pid);
    if (it == st.smaps.end()) it = st.smaps.emplace(r.pid, smapsOf(r.pid)).first;
    if (!it->second.ok()) {
      int code = it->second.error().code;
      MoveOutcome o = MoveOutcome::OtherError;
      if (code == ENOENT || code == ESRCH) {
        ps = PidState::Gone;
        o = MoveOutcome::Gone;
      } else if (code == EACCES || code == EPERM) {
        ps = PidState::Denied;
        o = MoveOutcome::Denied;
      }
      st.add(index, o, ceilDiv(r.length, unit));
      rr.dropped = o != MoveOutcome::OtherError;
      return;
    }
    planned = it->second.value().get();
  }
  if (!st.memsAllowed.count(r.pid)) {
    auto allowed = sys_->memsAllowed(r.pid);
    st.memsAllowed[r.pid] = allowed ? std::optional(allowed.value()) : std::nullopt;
  }
  const auto& vmas = *planned;
  const uint64_t thp = sys_->thpSize();
  // A range planned in base pages (page_granularity = "base") sends every base page address,
  // even where THPs back it; 0 (tierctl move) and 2 MiB send one address per THP.
  const bool basePagesOnly = r.pageSize != 0 && r.pageSize < thp;
  const uint64_t end = r.start + r.length;
  uint64_t cur = r.start;
  auto hole = [&](uint64_t upTo) {
    if (upTo <= cur) return;
    st.add(index, MoveOutcome::Gone, ceilDiv(upTo - cur, base));
    rr.dropped = true;
  };
  auto pushBase = [&](uint64_t a, uint64_t b, uint64_t psz) {
    if (b <= a) return;
    uint64_t s = alignDown(a, psz);
    st.segments.push_back({index, s, psz, ceilDiv(b - s, psz)});
  };
  for (const auto& v : vmas) {
    if (v.end <= cur) continue;
    if (v.start >= end) break;
    hole(v.start);
    uint64_t a = std::max(cur, v.start);
    uint64_t b = std::min(end, v.end);
    uint64_t psz = v.kernelPageSize ? v.kernelPageSize : base;
    if (v.hugetlb()) {
      pushBase(a, b, psz);
    } else if (!basePagesOnly && v.anonHugePages > 0 && v.anonHugePages == v.rss && thp > psz) {
      // All resident memory is PMD-mapped THP: one address per aligned 2 MiB chunk, base pages
      // for the unaligned edges (which cannot hold a PMD THP).
      uint64_t mid0 = std::min(b, alignUp(a, thp));
      uint64_t mid1 = std::max(mid0, alignDown(b, thp));
      pushBase(a, mid0, psz);
      if (mid1 > mid0) st.segments.push_back({index, mid0, thp, (mid1 - mid0) / thp});
      pushBase(mid1, b, psz);
    } else if (!basePagesOnly && v.anonHugePages > 0 && thp > psz) {
      // Partly huge: per aligned 2 MiB chunk, the head address first (a THP moves whole at its
      // head), then moveChunkTails() re-queries the other base pages and sends those still
      // elsewhere. Unaligned edges cannot hold a PMD THP: base pages.
      uint64_t mid0 = std::min(b, alignUp(a, thp));
      uint64_t mid1 = std::max(mid0, alignDown(b, thp));
      pushBase(a, mid0, psz);
      if (mid1 > mid0) st.segments.push_back({index, mid0, thp, (mid1 - mid0) / thp, true});
      pushBase(mid1, b, psz);
    } else if (v.rss == 0 && !fromLayout) {
      // Nothing resident (zero pages aside, which have nothing of their own to move). An older
      // layout's Rss 0 is not taken for now: such a VMA is planned as sparse, below.
      st.add(index, MoveOutcome::NotPresent, ceilDiv(b - a, psz));
    } else if (v.rss * 2 < v.size() && psz == base) {
      // Sparse: send only the pages pagemap shows mapped (~5 ns per entry to read).
      if (b - a > config_.locateMaxScanBytes) {
        st.add(index, MoveOutcome::NotAttempted, ceilDiv(b - a, psz));
      } else if (!planSparse(st, index, a, b)) {
        pushBase(a, b, psz);
      }
    } else {
      pushBase(a, b, psz);
    }
    cur = b;
  }
  hole(end);
}

const std::vector<sys::SmapsVma>* MovePagesMigrator::layoutFor(const MoveRange& r) const {
  if (!reads_ || reads_->smaps(r.pid)) return nullptr;  // this tick's read comes first
  const SmapsSnapshot layout = reads_->layout(r.pid);
  if (!layout) return nullptr;
  const std::vector<sys::SmapsVma>& vmas = *layout;  // kept by reads_ until its clear()
  const uint64_t end = r.start + r.length;
  auto v = std::upper_bound(vmas.begin(), vmas.end(), r.start,
                            [](uint64_t a, const sys::SmapsVma& x) { return a < x.end; });
  for (; v != vmas.end() && v->start < end; ++v)
    if (!v->hugetlb() && v->anonHugePages > 0) return nullptr;  // needs today's AnonHugePages
  return &vmas;
}

bool MovePagesMigrator::planSparse(BatchState& st, size_t index, uint64_t a, uint64_t b) {
  const uint64_t base = sys_->basePageSize();
  const pid_t pid = st.range(index).pid;
  constexpr uint64_t kBlock = 1u << 16;
  std::vector<Segment> segs;
  uint64_t absent = 0;
  a = alignDown(a, base);
  for (uint64_t x = a; x < b;) {
    const uint64_t n = std::min<uint64_t>(kBlock, ceilDiv(b - x, base));
    auto pm = sys_->pagemap(pid, x, n);
    if (!pm) return false;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t addr = x + i * base;
      if ((pm.value()[i] >> 63) == 0) {
        ++absent;
      } else if (!segs.empty() && segs.back().start + segs.back().count * base == addr) {
        segs.back().count += 1;
      } else {
        segs.push_back({index, addr, base, 1});
      }
    }
    x += n * base;
  }
  st.add(index, MoveOutcome::NotPresent, absent);
  st.segments.insert(st.segments.end(), segs.begin(), segs.end());
  return true;
}

std::vector<bool> MovePagesMigrator::liveVmas(pid_t pid, const std::vector<PageRef>& pages,
                                              const std::vector<int>& status) {
  std::vector<bool> live(pages.size(), false);
  if (std::find(status.begin(), status.end(), -EFAULT) == status.end()) return live;
  auto maps = sys_->maps(pid);
  if (!maps) return live;  // the process is gone: every -EFAULT page is gone
  const auto& vmas = maps.value();
  for (size_t i = 0; i < pages.size(); ++i) {
    if (status[i] != -EFAULT) continue;
    auto it = std::upper_bound(vmas.begin(), vmas.end(), pages[i].addr,
                               [](uint64_t a, const sys::SmapsVma& v) { return a < v.end; });
    live[i] = it != vmas.end() && it->start <= pages[i].addr;
  }
  return live;
}

void MovePagesMigrator::classify(BatchState& st, const PageRef& p, int status, bool moveCall,
                                 std::vector<PageRef>& busy, bool liveVma) {
  const MoveRange& r = st.range(p.range);
  RangeResult& rr = st.result.ranges[p.range];
  MigrationStats& s = st.result.stats;
  if (status == r.target) {
    if (moveCall && p.chunkHead) st.movedHeads.insert(p.addr);
    if (moveCall) {
      rr.outcomes[MoveOutcome::Moved] += 1;
      rr.bytesMoved += p.pageSize;
      s.pagesMoved += 1;
      s.bytesMoved += p.pageSize;
    } else {
      rr.outcomes[MoveOutcome::AlreadyThere] += 1;
    }
    return;
  }
  if (status >= 0) {
    rr.outcomes[MoveOutcome::NotMigrated] += 1;
    return;
  }
  if (status == kUntouched) {  // the kernel did not write it (must not happen when ret == 0)
    rr.outcomes[MoveOutcome::NotMigrated] += 1;
    return;
  }
  const int err = -status;
  s.errnoPages[err] += 1;
  switch (err) {
    case ENOENT:
      rr.outcomes[MoveOutcome::NotPresent] += 1;
      break;
    case EFAULT:
      if (liveVma) {  // the zero page or a special mapping: nothing of its own to move
        rr.outcomes[MoveOutcome::NotPresent] += 1;
        break;
      }
      rr.outcomes[MoveOutcome::Gone] += 1;
      rr.dropped = true;
      st.halted[p.range] = true;
      break;
    case EBUSY:
      rr.outcomes[MoveOutcome::Busy] += 1;
      busy.push_back(p);
      break;
    case EACCES:
    case EPERM:
      rr.outcomes[MoveOutcome::Denied] += 1;
      break;
    case ENOMEM:
      rr.outcomes[MoveOutcome::NoMemory] += 1;
      st.blocked.insert({p.pageSize, r.target});
      break;
    default:
      rr.outcomes[MoveOutcome::OtherError] += 1;
      break;
  }
}

void MovePagesMigrator::callFailed(BatchState& st, pid_t pid, const std::vector<PageRef>& pages,
                                   long err) {
  MigrationStats& s = st.result.stats;
  s.failedCalls += 1;
  s.errnoCalls[static_cast<int>(err)] += 1;
  MoveOutcome o = MoveOutcome::OtherError;
  if (err == EINVAL) {
    // mm/migrate.c find_mm_struct: a process that has exited but is not reaped yet (a zombie)
    // has no mm, and move_pages answers -EINVAL rather than -ESRCH. Its /proc/PID/maps then reads
    // empty (or fails once it is reaped): the process is gone.
    auto maps = sys_->maps(pid);
    if (!maps || maps->empty()) err = ESRCH;
  }
  if (err == ESRCH) {
    st.pids[pid] = PidState::Gone;
    st.dropPid(pid);
    o = MoveOutcome::Gone;
  } else if (err == EPERM || err == EACCES) {
    st.pids[pid] = PidState::Denied;
    st.dropPid(pid);
    o = MoveOutcome::Denied;
  }
  for (const auto& p : pages)
    st.add(p.range, o, 1);
}

void MovePagesMigrator::setLimits(const MigrationLimits& limits) {
  config_.callLatencyTargetNs = limits.callLatencyTargetNs;
  config_.promoteBytesPerSecond = limits.promoteBytesPerSecond;
  config_.demoteBytesPerSecond = limits.demoteBytesPerSecond;
}

bool MovePagesMigrator::waitForBudget(BatchState& st, const std::vector<PageRef>& pages) {
  const uint64_t rates[2] = {config_.promoteBytesPerSecond, config_.demoteBytesPerSecond};
  if (rates[0] == 0 && rates[1] == 0) return true;
  uint64_t want[2] = {0, 0};
  for (const auto& p : pages)
    want[dirIndex(st.range(p.range).direction)] += p.pageSize;
  auto refill = [&](int64_t now) {
    for (size_t d = 0; d < 2; ++d) {
      if (rates[d] == 0) continue;
      double r = static_cast<double>(rates[d]);
      tokens_[d] += r * static_cast<double>(now - tokensAtNs_[d]) / 1e9;
      tokens_[d] = std::min(tokens_[d], r);  // burst: at most one second of budget
      tokensAtNs_[d] = now;
    }
  };
  int64_t now = sys_->nowNs();
  refill(now);
  int64_t waitNs = 0;
  for (size_t d = 0; d < 2; ++d) {
    if (rates[d] == 0 || want[d] == 0 || tokens_[d] >= 0) continue;
    double w = -tokens_[d] / static_cast<double>(rates[d]) * 1e9;
    waitNs = std::max(waitNs, static_cast<int64_t>(std::ceil(w)));
  }
  if (waitNs > 0) {
    if (now + waitNs > st.deadlineNs) {
      st.result.stats.deadlineReached = true;
      return false;
    }
    if (!sys_->sleepUntilNs(now + waitNs, st.stop)) {  // SIGTERM: give up the wait
      st.result.stats.stopped = true;
      return false;
    }
    refill(sys_->nowNs());
  }
  for (size_t d = 0; d < 2; ++d)
    if (rates[d] != 0) tokens_[d] -= static_cast<double>(want[d]);
  return true;
}

std::vector<MovePagesMigrator::PageRef> MovePagesMigrator::processCall(
    BatchState& st, pid_t pid, const std::vector<PageRef>& call) {
  std::vector<PageRef> busy;
  MigrationStats& s = st.result.stats;
  std::vector<void*> addrs(call.size());
  for (size_t i = 0; i < call.size(); ++i)
    addrs[i] = reinterpret_cast<void*>(call[i].addr);
  std::vector<int> status(call.size(), kUntouched);
  long ret = sys_->movePages(pid, call.size(), addrs.data(), nullptr, status.data(), 0);
  s.queryCalls += 1;
  if (ret < 0) {
    callFailed(st, pid, call, -ret);
    return busy;
  }
  std::vector<PageRef> send;
  const std::vector<bool> live = liveVmas(pid, call, status);
  for (size_t i = 0; i < call.size(); ++i) {
    int target = st.range(call[i].range).target;
    if (call[i].chunkTail && status[i] != target)
      st.baseChunks.insert(alignDown(call[i].addr, sys_->thpSize()));
    if (status[i] >= 0 && status[i] != target)
      send.push_back(call[i]);
    else if (call[i].chunkTail && status[i] == target)
      continue;  // moved with its head's THP (or there already): nothing of its own to count
    else
      classify(st, call[i], status[i], false, busy, live[i]);
  }
  if (send.empty()) return busy;
  const uint64_t maxPages = std::max<uint64_t>(config_.maxPagesPerCall, 1);
  size_t i = 0;
  while (i < send.size()) {
    if (i > 0 && halted(st)) {
      for (; i < send.size(); ++i)
        st.add(send[i].range, MoveOutcome::NotAttempted, 1);
      break;
    }
    const uint64_t limit = bytesPerCall();
    std::vector<PageRef> sub;
    uint64_t bytes = 0;
    while (i < send.size() && sub.size() < maxPages && bytes < limit) {
      // One direction per call, so that each call's time is that direction's (metrics).
      if (!sub.empty() &&
          st.range(send[i].range).direction != st.range(sub.front().range).direction)
        break;
      const PageRef& p = send[i++];
      const PidState ps = st.pids[pid];
      if (ps != PidState::Ok || st.halted[p.range]) {
        st.add(p.range, ps == PidState::Denied ? MoveOutcome::Denied : MoveOutcome::Gone, 1);
        continue;
      }
      if (st.blocked.count({p.pageSize, st.range(p.range).target})) {
        st.add(p.range, MoveOutcome::NoMemory, 1);
        continue;
      }
      if (st.offline.count(st.range(p.range).target)) {
        st.add(p.range, MoveOutcome::OtherError, 1);
        st.result.stats.errnoPages[ENODEV] += 1;
        continue;
      }
      if (st.nodeNotAllowed(pid, st.range(p.range).target)) {
        st.add(p.range, MoveOutcome::NodeNotAllowed, 1);
        continue;
      }
      sub.push_back(p);
      bytes += p.pageSize;
    }
    if (sub.empty()) continue;
    // Pages of node groups the kernel never reached (it stopped at a failing group) go again.
    auto again = moveSubBatch(st, pid, sub, busy);
    send.insert(send.end(), again.begin(), again.end());
  }
  return busy;
}

bool MovePagesMigrator::halted(BatchState& st) {
  MigrationStats& s = st.result.stats;
  if (s.stopped || s.deadlineReached) return true;
  if (st.stop && st.stop->load(std::memory_order_relaxed)) s.stopped = true;
  if (!s.stopped && sys_->nowNs() >= st.deadlineNs) s.deadlineReached = true;
  return s.stopped || s.deadlineReached;
}

void MovePagesMigrator::moveChunkTails(BatchState& st) {
  const uint64_t base = sys_->basePageSize(), thp = sys_->thpSize();
  const uint64_t maxPages = std::max<uint64_t>(config_.maxPagesPerCall, 1);
  // A busy head may be a THP still elsewhere: a tail address would move it whole, uncounted.
  std::set<uint64_t> busyHeads;
  for (const PageRef& p : st.busy)
    if (p.chunkHead) busyHeads.insert(p.addr);
  for (const Segment& sg : st.segments) {
    if (!sg.mixed) continue;
    const pid_t pid = st.range(sg.range).pid;
    for (uint64_t c = 0; c < sg.count; ++c) {
      if (halted(st) || st.halted[sg.range] || st.pids[pid] != PidState::Ok) return;
      const uint64_t chunk = sg.start + c * thp;
      if (busyHeads.count(chunk)) continue;
      std::vector<PageRef> call;
      for (uint64_t a = chunk + base; a < chunk + thp; a += base) {
        call.push_back({sg.range, a, base, false, true});
        if (call.size() == maxPages || a + base == chunk + thp) {
          auto busy = processCall(st, pid, call);
          st.busy.insert(st.busy.end(), busy.begin(), busy.end());
          call.clear();
        }
      }
      // The head was a base page, not a THP: it moved 4 KiB, not 2 MiB.
      if (st.baseChunks.count(chunk) && st.movedHeads.count(chunk)) {
        st.result.ranges[sg.range].bytesMoved -= thp - base;
        st.result.stats.bytesMoved -= thp - base;
      }
    }
  }
}

std::vector<MovePagesMigrator::PageRef> MovePagesMigrator::moveSubBatch(
    BatchState& st, pid_t pid, const std::vector<PageRef>& send, std::vector<PageRef>& busy) {
  MigrationStats& s = st.result.stats;
  if (!waitForBudget(st, send)) {
    for (const auto& p : send)
      st.add(p.range, MoveOutcome::NotAttempted, 1);
    return {};
  }
  if (processCheck_ && !processCheck_(pid)) {
    // The pid now names another process (or none): nothing of this batch may touch it.
    st.pids[pid] = PidState::Gone;
    st.dropPid(pid);
    for (const auto& p : send)
      st.add(p.range, MoveOutcome::Gone, 1);
    return {};
  }
  std::vector<void*> sendAddrs(send.size());
  std::vector<int> nodes(send.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < send.size(); ++i) {
    sendAddrs[i] = reinterpret_cast<void*>(send[i].addr);
    nodes[i] = st.range(send[i].range).target;
    bytes += send[i].pageSize;
  }
  std::vector<int> moved(send.size(), kUntouched);
  const int flags = config_.moveShared ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
  const int64_t cpu0 = sys_->threadKernelCpuNs();
  int64_t t0 = sys_->nowNs();
  long ret = sys_->movePages(pid, send.size(), sendAddrs.data(), nodes.data(), moved.data(), flags);
  int64_t dt = sys_->nowNs() - t0;
  s.moveCalls += 1;
  s.maxCallNs = std::max(s.maxCallNs, dt);
  s.moveCallRecords.push_back(
      {st.range(send.front().range).direction, dt, sys_->threadKernelCpuNs() - cpu0, bytes});
  // A move call's -EACCES is do_pages_move's cpuset check (the query before it passed
  // find_mm_struct's permission checks, which fail queries too: those are Denied); its -ENODEV
  // a target without memory (its memory blocks taken offline since the plan).
  if (ret == -ENOMEM || ret == -EACCES || ret == -ENODEV)
    return groupFailed(st, pid, send, nodes, moved, static_cast<int>(-ret), busy);
  if (ret < 0) {
    callFailed(st, pid, send, -ret);
    return {};
  }
  if (bytes > 0 && dt > 0) {
    double sample = static_cast<double>(dt) / static_cast<double>(bytes);
    nsPerByte_ = nsPerByte_ <= 0 ? sample : 0.5 * nsPerByte_ + 0.5 * sample;
  }
  if (ret > 0) {
    // A positive return counts pages the kernel did not migrate, and the status entries of the
    // pages it never reached are not written: ask the kernel where each page is now.
    s.partialReturns += 1;
    s.partialPages += static_cast<uint64_t>(ret);
    std::vector<int> now(send.size(), kUntouched);
    long q = sys_->movePages(pid, send.size(), sendAddrs.data(), nullptr, now.data(), 0);
    s.queryCalls += 1;
    if (q < 0) {
      callFailed(st, pid, send, -q);
      return {};
    }
    // Every status the kernel did write is valid (a -EBUSY page stays busy and is retried); the
    // re-query answers only for the entries it left unwritten.
    for (size_t i = 0; i < send.size(); ++i)
      if (moved[i] != kUntouched) now[i] = moved[i];
    const std::vector<bool> live = liveVmas(pid, send, now);
    for (size_t i = 0; i < send.size(); ++i)
      classify(st, send[i], now[i], true, busy, live[i]);
    return {};
  }
  const std::vector<bool> live = liveVmas(pid, send, moved);
  for (size_t i = 0; i < send.size(); ++i)
    classify(st, send[i], moved[i], true, busy, live[i]);
  return {};
}

std::vector<MovePagesMigrator::PageRef> MovePagesMigrator::groupFailed(
    BatchState& st, pid_t pid, const std::vector<PageRef>& send, const std::vector<int>& nodes,
    const std::vector<int>& status, int err, std::vector<PageRef>& busy) {
  // mm/migrate.c do_pages_move handles the pages array in node groups (runs of entries with the
  // same target) and returns at the first group that fails.
  //
  // -EACCES: the entry's node is not in the task's cpuset.mems_allowed; the pending group was
  // migrated first (out_flush) with its statuses written, nothing from that entry on was
  // attempted. Pages to that node are NodeNotAllowed (for the rest of the batch); pages to other
  // nodes are sent again. Mems_allowed is re-read (the cpuset changed since planning).
  //
  // -ENODEV: the entry's node has no memory (node_state N_MEMORY: its memory blocks were taken
  // offline since planning); handled at the same place as -EACCES (out_flush): the pending group
  // was migrated first with its statuses written, nothing from that entry on was attempted. The
  // pages of the failing group are counted failed (OtherError, errnoPages ENODEV), and so is every
  // later page of the batch to that node, without a call (each would fail its call the same way);
  // pages of later groups to other nodes are sent again.
  //
  // -ENOMEM: migrate_pages() gave up
  // at the first page it could not allocate on the target (a full node; a gigantic page is never
  // allocated at migration time), the pages before it stayed moved, and no status was written
  // for that group (store_status runs only when do_move_pages_to_node succeeds) nor for the
  // groups after it, which were never attempted. The statuses written for earlier groups are
  // valid. So: keep the written statuses; re-query the rest; in the failing group (the first
  // unwritten entry and the unwritten entries after it with the same node), pages on the target
  // moved and the first page that stayed blocks its size on that node for the rest of the batch
  // (no_memory, like every later page of that size and node); everything else was not attempted
  // and is returned to be sent again.
  MigrationStats& s = st.result.stats;
  s.failedCalls += 1;
  s.errnoCalls[err] += 1;
  std::vector<void*> addrs(send.size());
  for (size_t i = 0; i < send.size(); ++i)
    addrs[i] = reinterpret_cast<void*>(send[i].addr);
  std::vector<int> now(send.size(), kUntouched);
  long q = sys_->movePages(pid, send.size(), addrs.data(), nullptr, now.data(), 0);
  s.queryCalls += 1;
  if (q < 0) {
    callFailed(st, pid, send, -q);
    return {};
  }
  size_t failing = send.size();  // first entry the kernel left unwritten
  for (size_t i = 0; i < send.size(); ++i) {
    if (status[i] != kUntouched) {
      now[i] = status[i];
    } else if (failing == send.size()) {
      failing = i;
    }
  }
  size_t groupEnd = failing;
  while (groupEnd < send.size() && status[groupEnd] == kUntouched &&
         nodes[groupEnd] == nodes[failing])
    ++groupEnd;
  const std::vector<bool> live = liveVmas(pid, send, now);
  std::vector<PageRef> again;
  if (err == EACCES) {
    auto allowed = sys_->memsAllowed(pid);
    st.memsAllowed[pid] = allowed ? std::optional(allowed.value()) : std::nullopt;
    // Without a readable Mems_allowed, the failing entry's node is the one refused. With one
    // that still allows that node (the pending group's migration failed instead), its group is
    // counted OtherError so that no page is sent forever.
    if (failing < send.size() && !allowed) st.notAllowed.insert({pid, nodes[failing]});
  }
  if (err == ENODEV && failing < send.size()) st.offline.insert(nodes[failing]);
  for (size_t i = 0; i < send.size(); ++i) {
    if (status[i] != kUntouched || now[i] < 0 || now[i] == nodes[i]) {
      classify(st, send[i], now[i], true, busy, live[i]);
      continue;
    }
    if (err == ENODEV) {
      if (st.offline.count(nodes[i])) {  // the failing group's node, and later pages to it
        st.add(send[i].range, MoveOutcome::OtherError, 1);
        s.errnoPages[ENODEV] += 1;
      } else {
        again.push_back(send[i]);  // not attempted by the kernel
      }
      continue;
    }
    if (err == EACCES) {
      if (st.nodeNotAllowed(pid, nodes[i]))
        st.add(send[i].range, MoveOutcome::NodeNotAllowed, 1);
      else if (i >= failing && i < groupEnd)
        st.add(send[i].range, MoveOutcome::OtherError, 1);
      else
        again.push_back(send[i]);  // not attempted by the kernel
      continue;
    }
    const std::pair<uint64_t, NodeId> key{send[i].pageSize, nodes[i]};
    if (i >= failing && i < groupEnd && st.blocked.insert(key).second) {
      // The page the kernel gave up at (it works in order): its size is blocked on that node.
    } else if (!st.blocked.count(key)) {
      again.push_back(send[i]);  // not attempted by the kernel
      continue;
    }
    st.add(send[i].range, MoveOutcome::NoMemory, 1);
    s.errnoPages[ENOMEM] += 1;
  }
  return again;
}

BatchResult MovePagesMigrator::execute(const std::vector<MoveRange>& batch, int64_t deadlineNs,
                                       const std::atomic<bool>* stop) {
  BatchState st;
  st.batch = &batch;
  st.deadlineNs = deadlineNs;
  st.stop = stop;
  st.result.ranges.resize(batch.size());
  st.halted.assign(batch.size(), false);
  for (size_t i = 0; i < batch.size(); ++i)
    st.result.ranges[i].range = batch[i];
  MigrationStats& s = st.result.stats;
  const int64_t t0 = sys_->nowNs();
  const int64_t cpu0 = sys_->threadKernelCpuNs();

  for (size_t i = 0; i < batch.size(); ++i)
    planRange(st, i);

  const uint64_t maxPages = std::max<uint64_t>(config_.maxPagesPerCall, 1);

  size_t si = 0;
  uint64_t pos = 0;
  while (si < st.segments.size()) {
    if (halted(st)) {
      for (; si < st.segments.size(); ++si, pos = 0)
        st.add(st.segments[si].range, MoveOutcome::NotAttempted, st.segments[si].count - pos);
      break;
    }
    const pid_t pid = st.range(st.segments[si].range).pid;
    std::vector<PageRef> call;
    while (si < st.segments.size() && call.size() < maxPages) {
      const Segment& sg = st.segments[si];
      const MoveRange& r = st.range(sg.range);
      if (r.pid != pid) break;
      PidState ps = st.pids[pid];
      const bool blocked = st.blocked.count({sg.pageSize, r.target}) > 0;
      const bool offline = st.offline.count(r.target) > 0;
      if (ps != PidState::Ok || st.halted[sg.range] || blocked || offline ||
          st.nodeNotAllowed(pid, r.target)) {
        MoveOutcome o = ps == PidState::Denied ? MoveOutcome::Denied
                        : ps == PidState::Gone ? MoveOutcome::Gone
                        : st.halted[sg.range]  ? MoveOutcome::Gone
                        : blocked              ? MoveOutcome::NoMemory
                        : offline              ? MoveOutcome::OtherError
                                               : MoveOutcome::NodeNotAllowed;
        if (o == MoveOutcome::OtherError) st.result.stats.errnoPages[ENODEV] += sg.count - pos;
        st.add(sg.range, o, sg.count - pos);
        ++si;
        pos = 0;
        continue;
      }
      call.push_back({sg.range, sg.start + pos * sg.pageSize, sg.pageSize, sg.mixed, false});
      if (++pos == sg.count) {
        ++si;
        pos = 0;
      }
    }
    if (call.empty()) continue;
    auto busy = processCall(st, pid, call);
    st.busy.insert(st.busy.end(), busy.begin(), busy.end());
  }

  moveChunkTails(st);

  // -EBUSY pages: back off, then try again (they are often under migration or pinned briefly).
  for (int attempt = 0; attempt < config_.busyRetries && !st.busy.empty(); ++attempt) {
    if (halted(st)) break;
    int64_t at = sys_->nowNs() + config_.busyBackoffNs;
    if (at >= deadlineNs) break;
    if (!sys_->sleepUntilNs(at, st.stop)) {  // stopped during the back-off: pages stay Busy
      s.stopped = true;
      break;
    }
    std::vector<PageRef> pending = std::move(st.busy);
    st.busy.clear();
    for (const auto& p : pending)
      st.result.ranges[p.range].outcomes[MoveOutcome::Busy] -= 1;
    size_t i = 0;
    while (i < pending.size()) {
      if (halted(st)) {
        for (; i < pending.size(); ++i) {
          st.result.ranges[pending[i].range].outcomes[MoveOutcome::Busy] += 1;
          st.busy.push_back(pending[i]);
        }
        break;
      }
      const pid_t pid = st.range(pending[i].range).pid;
      std::vector<PageRef> call;
      while (i < pending.size() && call.size() < maxPages &&
             st.range(pending[i].range).pid == pid) {
        const PageRef& p = pending[i++];
        if (st.halted[p.range]) {
          st.add(p.range, MoveOutcome::Gone, 1);
          continue;
        }
        call.push_back(p);
      }
      if (call.empty()) continue;
      auto busy = processCall(st, pid, call);
      st.busy.insert(st.busy.end(), busy.begin(), busy.end());
    }
  }
  for (const auto& p : st.busy)
    st.result.ranges[p.range].busy.push_back(p.addr);

  s.wallNs = sys_->nowNs() - t0;
  s.kernelCpuNs = sys_->threadKernelCpuNs() - cpu0;
  return std::move(st.result);
}

namespace {

Result<std::vector<int>> queryPages(PageSystem& system, pid_t pid,
                                    const std::vector<uint64_t>& addrs, uint64_t& calls) {
  std::vector<void*> p(addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i)
    p[i] = reinterpret_cast<void*>(addrs[i]);
  std::vector<int> status(addrs.size(), kUntouched);
  if (addrs.empty()) return status;
  long ret = system.movePages(pid, addrs.size(), p.data(), nullptr, status.data(), 0);
  calls += 1;
  if (ret < 0)
    return Error::sys(static_cast<int>(-ret), "move_pages(nodes=NULL) failed",
                      "pid " + std::to_string(pid));
  return status;
}

}  // namespace

// One locate() call: its pid and page sizes, the VMA tables it reads, the runs it emits.
struct MovePagesMigrator::LocateState {
  pid_t pid = 0;
  uint64_t base = 0;  // base page size
  uint64_t thp = 0;   // PMD THP size
  std::map<uint64_t, const sys::NumaMapsVma*> numaByStart;
  SmapsSnapshot smaps;                                    // read (or shared) on first need
  std::map<uint64_t, const sys::SmapsVma*> smapsByStart;  // into `smaps`
  const sys::MemoryBlockNodes* blocks = nullptr;          // PFN -> node; null: query instead
  LocateResult out;

  // Appends a run, merged into the last one when it continues it with the same status and page
  // size. Empty runs are dropped.
  void emit(uint64_t start, uint64_t len, uint64_t psz, int status) {
    if (len == 0) return;
    if (!out.runs.empty()) {
      LocatedRun& last = out.runs.back();
      if (last.start + last.length == start && last.status == status && last.pageSize == psz) {
        last.length += len;
        return;
      }
    }
    out.runs.push_back({start, len, psz, status});
  }
};

namespace {
constexpr uint64_t kQueryBatch = 1u << 16;  // addresses per locate query or pagemap read

// Every range of a locate call starts and ends on a base page.
Status checkAligned(pid_t pid, const std::vector<AddressRange>& ranges, uint64_t base) {
  for (const auto& r : ranges)
    if (r.start % base != 0 || r.length % base != 0)
      return Error::input("range is not aligned to the base page size " + std::to_string(base),
                          "locate pid " + std::to_string(pid));
  return Ok{};
}
}  // namespace

// One query per base page of [a, b), in batches of kQueryBatch addresses.
Status MovePagesMigrator::queryBasePages(LocateState& st, uint64_t a, uint64_t b) {
  const uint64_t base = st.base;
  std::vector<uint64_t> addrs;
  for (uint64_t x = a; x < b;) {
    addrs.clear();
    for (; x < b && addrs.size() < kQueryBatch; x += base)
      addrs.push_back(x);
    auto q = queryPages(*sys_, st.pid, addrs, st.out.queryCalls);
    if (!q) return q.error();
    st.out.queriedPages += addrs.size();
    for (size_t i = 0; i < addrs.size(); ++i)
      st.emit(addrs[i], base, base, q.value()[i]);
  }
  return Ok{};
}

Result<LocateResult> MovePagesMigrator::locate(pid_t pid, const std::vector<AddressRange>& ranges) {
  LocateState st;
  st.pid = pid;
  st.base = sys_->basePageSize();
  st.thp = sys_->thpSize();
  if (Status s = checkAligned(pid, ranges, st.base); !s) return s.error();
  auto maps = sys_->maps(pid);
  if (!maps) return maps.error();
  // The caller's read of this tick (ProcReads::numaMaps), else our own.
  NumaMapsSnapshot numa = reads_ ? reads_->numaMaps(pid) : nullptr;
  if (!numa) {
    auto read = sys_->numaMaps(pid);
    if (!read) return read.error();
    numa = std::make_shared<const std::vector<sys::NumaMapsVma>>(std::move(read.value()));
  }
  for (const auto& n : *numa)
    st.numaByStart[n.start] = &n;
  st.blocks = blockMap();

  const auto& vmas = maps.value();
  for (const auto& r : ranges) {
    const uint64_t end = r.start + r.length;
    uint64_t cur = r.start;
    auto vit = std::upper_bound(vmas.begin(), vmas.end(), cur,
                                [](uint64_t v, const sys::SmapsVma& m) { return v < m.end; });
    for (; vit != vmas.end() && vit->start < end; ++vit) {
      const auto& v = *vit;
      if (v.start > cur) st.emit(cur, v.start - cur, st.base, -EFAULT);  // no VMA: -EFAULT
      const uint64_t a = std::max(cur, v.start);
      const uint64_t b = std::min(end, v.end);
      cur = b;
      if (Status s = locateInVma(st, v, a, b); !s) return s.error();
    }
    if (cur < end) st.emit(cur, end - cur, st.base, -EFAULT);
  }
  return std::move(st.out);
}

Result<LocateResult> MovePagesMigrator::locatePages(pid_t pid,
                                                    const std::vector<AddressRange>& ranges) {
  LocateState st;
  st.pid = pid;
  st.base = sys_->basePageSize();
  if (Status s = checkAligned(pid, ranges, st.base); !s) return s.error();
  for (const auto& r : ranges)
    if (Status s = queryBasePages(st, r.start, r.start + r.length); !s) return s.error();
  return std::move(st.out);
}

Status MovePagesMigrator::locateInVma(LocateState& st, const sys::SmapsVma& v, uint64_t a,
                                      uint64_t b) {
  const uint64_t base = st.base;
  auto nit = st.numaByStart.find(v.start);
  const sys::NumaMapsVma* n = nit == st.numaByStart.end() ? nullptr : nit->second;
  if (n && n->huge && n->kernelPageSize > 0) {
    const uint64_t psz = n->kernelPageSize;
    if (n->pagesPerNode.size() == 1 && n->presentPages() * psz == v.size()) {
      st.emit(a, b - a, psz, n->pagesPerNode.begin()->first);
      st.out.skippedBytes += b - a;
      return Ok{};
    }
    return locatePerHugePage(st, a, b, psz);
  }
  if (n && n->kernelPageSize == base && n->pagesPerNode.size() == 1 &&
      n->presentPages() * base == v.size()) {
    // Every base page of the VMA is present, all on one node (numa_maps counts only present
    // pages; zero pages and special mappings are not counted, so they never get here).
    st.emit(a, b - a, base, n->pagesPerNode.begin()->first);
    st.out.skippedBytes += b - a;
    return Ok{};
  }
  if (!st.smaps) {
    auto sm = smapsOf(st.pid);
    if (!sm) return sm.error();
    st.smaps = std::move(sm.value());
    for (const sys::SmapsVma& m : *st.smaps)
      st.smapsByStart.emplace(m.start, &m);
  }
  auto sit = st.smapsByStart.find(v.start);
  const sys::SmapsVma* sv = sit == st.smapsByStart.end() ? nullptr : sit->second;
  if (sv && sv->end == v.end && !sv->hugetlb() && sv->anonHugePages > 0 &&
      sv->anonHugePages == sv->rss && st.thp > base)
    return locateThpChunks(st, v, a, b);
  const bool isSparse = n && !n->huge && n->presentPages() * base * 2 < v.size();
  return isSparse ? locateSparse(st, v, a, b) : locatePerBasePage(st, v, a, b);
}

const sys::MemoryBlockNodes* MovePagesMigrator::blockMap() {
  const int64_t now = sys_->nowNs();
  if (!blocksReadAtNs_ || now - *blocksReadAtNs_ >= kBlockMapMaxAgeNs || now < *blocksReadAtNs_) {
    blocksReadAtNs_ = now;
    auto read = sys_->memoryBlockNodes();
    if (read && !read->nodeOfBlock.empty())
      blocks_ = std::move(read.value());
    else
      blocks_.reset();
  }
  return blocks_ ? &*blocks_ : nullptr;
}

// Per-base-page answers over [a, b): from pagemap and the memory block map when there is one,
// else queries in batches.
Status MovePagesMigrator::locatePerBasePage(LocateState& st, const sys::SmapsVma& v, uint64_t a,
                                            uint64_t b) {
  if (st.blocks) return locateByPagemap(st, v, a, b);
  return queryBasePages(st, a, b);
}

// One query per huge page of size psz covering [a, b); run lengths clipped to [a, b).
Status MovePagesMigrator::locatePerHugePage(LocateState& st, uint64_t a, uint64_t b, uint64_t psz) {
  std::vector<uint64_t> addrs;
  for (uint64_t x = alignDown(a, psz); x < b;) {
    addrs.clear();
    for (; x < b && addrs.size() < kQueryBatch; x += psz)
      addrs.push_back(std::max(x, a));
    auto q = queryPages(*sys_, st.pid, addrs, st.out.queryCalls);
    if (!q) return q.error();
    st.out.queriedPages += addrs.size();
    for (size_t i = 0; i < addrs.size(); ++i) {
      uint64_t s = addrs[i];
      uint64_t e = std::min(b, alignDown(s, psz) + psz);
      st.emit(s, e - s, psz, q.value()[i]);
    }
  }
  return Ok{};
}

// Sparse memory: pagemap says which base pages are mapped at all (~5 ns per entry, against
// ~30 ns per move_pages address); only those are queried, the rest is -ENOENT.
Status MovePagesMigrator::locateSparse(LocateState& st, const sys::SmapsVma& v, uint64_t a,
                                       uint64_t b) {
  if (b - a > config_.locateMaxScanBytes) {
    st.out.unscanned.push_back({a, b - a});
    return Ok{};
  }
  return locateByPagemap(st, v, a, b);
}

// [a, b) of VMA `v` from /proc/PID/pagemap: not present is -ENOENT; a present page mapped once
// (PM_MMAP_EXCLUSIVE: never the zero pages, whose page the kernel does not count as mapped, nor a
// special mapping), with its page frame in a block of one node, is on that node, unless it is a
// file page in a VMA without a file (a huge zero page on kernels that mark it so); the rest is
// queried, so the answers are the naive query's. Without a block map every present page is
// queried (sparse memory: only the mapped pages cost a query).
Status MovePagesMigrator::locateByPagemap(LocateState& st, const sys::SmapsVma& v, uint64_t a,
                                          uint64_t b) {
  const uint64_t base = st.base;
  const bool fileVma = !v.path.empty() && v.path[0] == '/';
  std::vector<int> status;
  std::vector<uint64_t> addrs;  // present pages the pagemap entry does not settle
  std::vector<size_t> where;    // their index in `status`
  for (uint64_t x = a; x < b;) {
    const uint64_t n = std::min<uint64_t>(kQueryBatch, (b - x) / base);
    auto pm = sys_->pagemap(st.pid, x, n);
    if (!pm) return pm.error();
    st.out.pagemapPages += n;
    status.assign(n, -ENOENT);
    addrs.clear();
    where.clear();
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t e = pm.value()[i];
      if (!(e & kPagemapPresent)) continue;
      const uint64_t pfn = e & kPagemapPfnMask;
      std::optional<NodeId> node;
      if (st.blocks && pfn != 0 && (e & kPagemapExclusive) && (fileVma || !(e & kPagemapFile)))
        node = st.blocks->nodeOfPfn(pfn, base);
      if (node) {
        status[i] = *node;
        ++st.out.pfnPages;
      } else {
        addrs.push_back(x + i * base);
        where.push_back(i);
      }
    }
    if (!addrs.empty()) {
      auto q = queryPages(*sys_, st.pid, addrs, st.out.queryCalls);
      if (!q) return q.error();
      st.out.queriedPages += addrs.size();
      for (size_t k = 0; k < addrs.size(); ++k)
        status[where[k]] = q.value()[k];
    }
    for (uint64_t i = 0; i < n; ++i)
      st.emit(x + i * base, base, base, status[i]);
    x += n * base;
  }
  return Ok{};
}

// All resident pages of `v` are PMD-mapped THPs: if the first address of an aligned chunk is
// present, a THP covers the whole chunk; if it is not, pagemap tells whether anything (a zero
// page) is mapped in the chunk. Chunks cut by the VMA's ends are queried per base page.
Status MovePagesMigrator::locateThpChunks(LocateState& st, const sys::SmapsVma& v, uint64_t a,
                                          uint64_t b) {
  const uint64_t base = st.base;
  const uint64_t thp = st.thp;
  for (uint64_t c = alignDown(a, thp); c < b; c += thp) {
    const uint64_t ca = std::max(a, c);
    const uint64_t cb = std::min(b, c + thp);
    if (c < v.start || c + thp > v.end) {
      if (Status s = locatePerBasePage(st, v, ca, cb); !s) return s;
      continue;
    }
    auto q = queryPages(*sys_, st.pid, {ca}, st.out.queryCalls);
    if (!q) return q.error();
    st.out.queriedPages += 1;
    if (q.value()[0] >= 0) {
      st.emit(ca, cb - ca, thp, q.value()[0]);
      continue;
    }
    if (q.value()[0] == -ENOENT) {
      // No THP here. Zero pages would answer -EFAULT yet are invisible to smaps and
      // numa_maps; pagemap shows them present. Nothing present: all -ENOENT.
      auto pm = sys_->pagemap(st.pid, ca, (cb - ca) / base);
      if (!pm) return pm.error();
      bool anyPresent = false;
      for (uint64_t e : pm.value())
        anyPresent = anyPresent || (e >> 63) != 0;
      if (!anyPresent) {
        st.emit(ca, cb - ca, thp, -ENOENT);
        st.out.pagemapPages += pm->size();
        continue;
      }
    }
    if (Status s = locatePerBasePage(st, v, ca, cb); !s) return s;
  }
  return Ok{};
}

Result<std::vector<int>> naiveLocate(PageSystem& system, pid_t pid,
                                     const std::vector<AddressRange>& ranges,
                                     uint64_t addressesPerCall) {
  const uint64_t base = system.basePageSize();
  std::vector<int> out;
  std::vector<uint64_t> addrs;
  uint64_t calls = 0;
  for (const auto& r : ranges) {
    for (uint64_t x = r.start; x < r.start + r.length;) {
      addrs.clear();
      for (; x < r.start + r.length && addrs.size() < addressesPerCall; x += base)
        addrs.push_back(x);
      auto st = queryPages(system, pid, addrs, calls);
      if (!st) return st.error();
      out.insert(out.end(), st.value().begin(), st.value().end());
    }
  }
  return out;
}

}  // namespace tierd::migrate

// `tierctl move --pid PID --to NODE [--range A-B] [--json]`: one explicit migration through the
// MovePagesMigrator, with per-outcome and per-errno results (JSON fields in docs/migrate.md).
#include <string.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/Parsers.h"
#include "tierd/sys/ProcMaps.h"
#include "tierd/topology/Topology.h"

namespace tierd::cli {
namespace {

std::string errnoName(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "E" + std::to_string(e);
}

const char* directionName(Direction dir) {
  return dir == Direction::Promote ? "promote" : "demote";
}

// Direction for the byte budget and reports: demotion when the target is in the slow tier.
// Errors: Input when the topology lists the nodes and `target` is not one of them (move_pages(2)
// would refuse it per call with -ENODEV; a node outside the process's cpuset would be refused
// without a call: a typo must not read as a move that found nothing to do).
Result<Direction> directionTo(const sys::SysRoot& root, NodeId target) {
  auto topo = topology::readTopology(root);
  if (!topo) return Direction::Promote;  // no topology here: the kernel's answers tell
  std::set<int> ids;
  for (const auto& n : topo->nodes) {
    if (n.id == target)
      return n.tier == topology::Tier::Slow ? Direction::Demote : Direction::Promote;
    ids.insert(n.id);
  }
  return Error::input(
      "node " + std::to_string(target) + " does not exist (nodes: " + sys::formatIdList(ids) + ")",
      "--to");
}

// One range per mapping of `maps` ([vsyscall] aside), clipped to [lo, hi).
std::vector<MoveRange> rangesIn(const std::vector<sys::SmapsVma>& maps, pid_t pid, uint64_t lo,
                                uint64_t hi, NodeId target, Direction dir) {
  std::vector<MoveRange> batch;
  for (const auto& v : maps) {
    if (v.path == "[vsyscall]") continue;
    uint64_t a = std::max(lo, v.start);
    uint64_t b = std::min(hi, v.end);
    if (a >= b) continue;
    MoveRange r;
    r.pid = pid;
    r.start = a;
    r.length = b - a;
    r.pageSize = 0;  // the migrator reads it from smaps
    r.target = target;
    r.direction = dir;
    batch.push_back(r);
  }
  return batch;
}

// What one move did, summed over its ranges.
struct MoveSummary {
  pid_t pid = 0;
  NodeId target = -1;
  Direction dir = Direction::Promote;
  size_t ranges = 0;
  size_t dropped = 0;
  OutcomeCounts total;
};

MoveSummary summarize(pid_t pid, NodeId target, Direction dir, const BatchResult& res) {
  MoveSummary m;
  m.pid = pid;
  m.target = target;
  m.dir = dir;
  m.ranges = res.ranges.size();
  for (const auto& r : res.ranges) {
    for (size_t o = 0; o < kMoveOutcomeCount; ++o)
      m.total.pages[o] += r.outcomes.pages[o];
    m.dropped += r.dropped;
  }
  return m;
}

// The JSON form (fields in docs/migrate.md).
void printJson(const MoveSummary& m, const MigrationStats& s) {
  nlohmann::json j;
  j["pid"] = m.pid;
  j["to"] = m.target;
  j["direction"] = directionName(m.dir);
  j["ranges"] = m.ranges;
  j["ranges_dropped"] = m.dropped;
  for (size_t o = 0; o < kMoveOutcomeCount; ++o)
    j["pages"][moveOutcomeName(static_cast<MoveOutcome>(o))] = m.total.pages[o];
  j["bytes_moved"] = s.bytesMoved;
  j["errno_pages"] = nlohmann::json::object();
  for (const auto& [e, n] : s.errnoPages)
    j["errno_pages"][errnoName(e)] = n;
  j["errno_calls"] = nlohmann::json::object();
  for (const auto& [e, n] : s.errnoCalls)
    j["errno_calls"][errnoName(e)] = n;
  j["query_calls"] = s.queryCalls;
  j["move_calls"] = s.moveCalls;
  j["partial_returns"] = s.partialReturns;
  j["wall_seconds"] = static_cast<double>(s.wallNs) / 1e9;
  j["kernel_cpu_seconds"] = static_cast<double>(s.kernelCpuNs) / 1e9;
  j["max_call_seconds"] = static_cast<double>(s.maxCallNs) / 1e9;
  j["gib_per_s"] = s.gibPerSecond();
  j["cpu_seconds_per_gib"] = s.cpuSecondsPerGib();
  j["deadline_reached"] = s.deadlineReached;
  std::cout << j.dump(2) << "\n";
}

// The text form: one line per outcome and errno seen, then the totals.
void printText(const MoveSummary& m, const MigrationStats& s) {
  std::cout << "move pid " << m.pid << " -> node " << m.target << " (" << directionName(m.dir)
            << "): " << m.ranges << " ranges, " << m.dropped << " dropped\n";
  for (size_t o = 0; o < kMoveOutcomeCount; ++o)
    if (m.total.pages[o])
      std::printf("  %-14s %10llu pages\n", moveOutcomeName(static_cast<MoveOutcome>(o)),
                  static_cast<unsigned long long>(m.total.pages[o]));
  for (const auto& [e, n] : s.errnoPages)
    std::printf("  status %-7s %10llu pages\n", errnoName(e).c_str(),
                static_cast<unsigned long long>(n));
  for (const auto& [e, n] : s.errnoCalls)
    std::printf("  call failed %-7s %5llu calls\n", errnoName(e).c_str(),
                static_cast<unsigned long long>(n));
  std::printf(
      "  moved %s in %.3f s (%.2f GiB/s, %.4f CPU s/GiB), %llu query + %llu move calls, "
      "longest call %.1f ms%s\n",
      formatBytes(s.bytesMoved).c_str(), static_cast<double>(s.wallNs) / 1e9, s.gibPerSecond(),
      s.cpuSecondsPerGib(), static_cast<unsigned long long>(s.queryCalls),
      static_cast<unsigned long long>(s.moveCalls), static_cast<double>(s.maxCallNs) / 1e6,
      s.deadlineReached ? ", deadline reached" : "");
}

}  // namespace

int moveCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl move",
      "usage: tierctl move --pid PID --to NODE [--range A-B] [--json]\n\nMoves the process's "
      "pages (one address per huge page) to NODE and prints what happened to them, per outcome "
      "and errno.\n",
      {
          {"pid", true, "process id", "PID"},
          {"to", true, "target node", "NODE"},
          {"range", true, "only this hex address range A-B (default: every VMA)", "A-B"},
          {"timeout-ms", true, "deadline for the whole move (default 60000)", "MS"},
          kMigrateJsonOption,
          kSysRootOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  auto pidArg = parsed->pid("pid");
  if (!pidArg) return fail(spec, pidArg.error(), 2);
  if (!parsed->has("to")) return fail(spec, Error::input("--to is required", "command line"), 2);
  auto to = parsed->integer("to", 0, 0, kMaxNodeOption);
  if (!to) return fail(spec, to.error(), 2);
  // At most 2^32 ms (about 50 days): the deadline in nanoseconds stays far inside int64.
  auto timeout = parsed->integer("timeout-ms", 60000, 0, 1ull << 32);
  if (!timeout) return fail(spec, timeout.error(), 2);
  uint64_t lo = 0;
  uint64_t hi = UINT64_MAX;
  if (auto r = parsed->get("range")) {
    auto ar = parseAddressRange(*r, "--range");
    if (!ar) return fail(spec, ar.error(), 2);
    lo = ar->first;
    hi = ar->second;
  }
  const pid_t pid = pidArg.value();
  const NodeId target = static_cast<NodeId>(to.value());
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));

  auto direction = directionTo(root, target);
  if (!direction) return fail(spec, direction.error(), 2);
  const Direction dir = direction.value();

  auto maps = sys::readMaps(root, pid);
  if (!maps) return fail(spec, maps.error(), 1);
  std::vector<MoveRange> batch = rangesIn(maps.value(), pid, lo, hi, target, dir);
  if (batch.empty())
    return fail(spec, Error::input("no mapping of the process in the range", "--range"), 1);

  migrate::MovePagesMigrator mig({}, migrate::makeLinuxPageSystem(root));
  const int64_t deadline = mig.nowNs() + static_cast<int64_t>(timeout.value()) * 1'000'000;
  BatchResult res = mig.execute(batch, deadline);
  const MoveSummary summary = summarize(pid, target, dir, res);
  if (parsed->has("json"))
    printJson(summary, res.stats);
  else
    printText(summary, res.stats);
  return 0;
}

}  // namespace tierd::cli

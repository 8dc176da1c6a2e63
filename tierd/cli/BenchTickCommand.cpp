// tierctl bench tick: CPU ms of the daemon's tick for one synthetic process with many VMAs of
// THP, when nothing changed and after a change of its mappings.
// The measuring run is tierd/daemon/TickBench.h; this file parses options and prints.
// JSON fields: docs/migrate.md.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/TickBench.h"

namespace tierd::cli {
namespace {

using daemon::TickKind;
using daemon::TickSample;

double ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// Median and max of the ticks of `kind`, over `field` (ns).
struct KindStats {
  size_t ticks = 0;
  size_t fullReads = 0;
  double cpuMedianMs = 0, cpuMaxMs = 0, wallMedianMs = 0, wallMaxMs = 0;
  double locateMedianMs = 0;
};

KindStats statsOf(const std::vector<TickSample>& all, TickKind kind) {
  KindStats k;
  std::vector<uint64_t> cpu, wall, locate;
  for (const TickSample& s : all) {
    if (s.kind != kind) continue;
    ++k.ticks;
    k.fullReads += s.fullRead ? 1 : 0;
    cpu.push_back(s.cpuNs);
    wall.push_back(s.wallNs);
    locate.push_back(s.phases.locateNs);
  }
  if (cpu.empty()) return k;
  k.cpuMedianMs = daemon::medianMs(cpu);
  k.cpuMaxMs = ms(*std::max_element(cpu.begin(), cpu.end()));
  k.wallMedianMs = daemon::medianMs(wall);
  k.wallMaxMs = ms(*std::max_element(wall.begin(), wall.end()));
  k.locateMedianMs = daemon::medianMs(locate);
  return k;
}

nlohmann::json kindJson(const KindStats& k) {
  return {{"ticks", k.ticks},
          {"full_reads", k.fullReads},
          {"cpu_ms", {{"median", k.cpuMedianMs}, {"max", k.cpuMaxMs}}},
          {"wall_ms", {{"median", k.wallMedianMs}, {"max", k.wallMaxMs}}},
          {"locate_cpu_ms_median", k.locateMedianMs}};
}

nlohmann::json tickJson(const TickSample& s) {
  return {{"kind", daemon::tickKindName(s.kind)},
          {"cpu_ms", ms(s.cpuNs)},
          {"wall_ms", ms(s.wallNs)},
          {"full_read", s.fullRead},
          {"phases_cpu_ms",
           {{"topology_scope", ms(s.phases.topologyScopeNs)},
            {"locate", ms(s.phases.locateNs)},
            {"sampling", ms(s.phases.samplingNs)},
            {"policy", ms(s.phases.policyNs)},
            {"migrate", ms(s.phases.migrateNs)}}}};
}

void printJson(const daemon::TickBenchOptions& o, const daemon::TickBenchReport& r) {
  nlohmann::json j;
  j["pid"] = r.childPid;
  j["size_bytes"] = o.sizeBytes;
  j["bench_bytes"] = r.benchBytes;
  j["thp_bytes"] = r.thpBytes;
  j["managed_bytes"] = r.managedBytes;
  j["managed_gib"] = static_cast<double>(r.managedBytes) / static_cast<double>(kGiB);
  j["vmas_requested"] = r.vmasPlanned;
  j["vmas_found"] = r.vmasFound;
  j["vmas_total"] = r.vmasTotal;
  j["managed_vmas"] = r.managedVmas;
  j["ticks_per_kind"] = o.ticks;
  j["dry_run"] = true;
  j["sampling"] = "none";
  j["first"] = tickJson(r.ticks.front());
  j["unchanged"] = kindJson(statsOf(r.ticks, TickKind::Unchanged));
  j["changed"] = kindJson(statsOf(r.ticks, TickKind::Changed));
  j["ticks"] = nlohmann::json::array();
  for (const TickSample& s : r.ticks)
    j["ticks"].push_back(tickJson(s));
  j["problems"] = r.problems;
  std::cout << j.dump(2) << "\n";
}

void printText(const daemon::TickBenchOptions& o, const daemon::TickBenchReport& r) {
  std::printf(
      "bench tick: %llu VMAs of %s (%llu found as mapped, %s THP), %llu VMAs in all, %llu "
      "managed (%s); %d ticks of each kind, dry run, no sampling\n",
      static_cast<unsigned long long>(r.vmasPlanned), formatBytes(r.benchBytes).c_str(),
      static_cast<unsigned long long>(r.vmasFound), formatBytes(r.thpBytes).c_str(),
      static_cast<unsigned long long>(r.vmasTotal), static_cast<unsigned long long>(r.managedVmas),
      formatBytes(r.managedBytes).c_str(), o.ticks);
  const TickSample& f = r.ticks.front();
  std::printf("  %-10s cpu %9.2f ms             wall %9.2f ms             (%s)\n", "first",
              ms(f.cpuNs), ms(f.wallNs), f.fullRead ? "full read" : "reused");
  for (TickKind kind : {TickKind::Unchanged, TickKind::Changed}) {
    const KindStats k = statsOf(r.ticks, kind);
    std::printf(
        "  %-10s cpu %9.2f ms (max %7.2f)  wall %9.2f ms (max %7.2f)  locate cpu %.2f ms; %zu of "
        "%zu ticks read in full\n",
        daemon::tickKindName(kind), k.cpuMedianMs, k.cpuMaxMs, k.wallMedianMs, k.wallMaxMs,
        k.locateMedianMs, k.fullReads, k.ticks);
  }
  for (const std::string& p : r.problems)
    std::printf("  problem: %s\n", p.c_str());
}

}  // namespace

int benchTickCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl bench tick",
      "usage: tierctl bench tick [--size 1GiB] [--vmas N] [--ticks T] [--json]\n\nForks a "
      "process holding SIZE of touched THP-advised anonymous memory in N separate VMAs, and runs "
      "the daemon's tick (tierd's Engine, dry run, no sampling) on it: CPU and wall ms per tick "
      "of the calling thread, median and max, for ticks where nothing changed and ticks right "
      "after the process mapped or unmapped one VMA.\n",
      {
          {"size", true, "memory of the process (default 1GiB; B, KiB, MiB, GiB, TiB)", "SIZE"},
          {"vmas", true, "VMAs it is split over (default 256; SIZE >= N x 2MiB)", "N"},
          {"ticks", true, "measured ticks of each kind (default 5)", "T"},
          kMigrateJsonOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  auto size = parsed->size("size", kGiB);
  if (!size) return fail(spec, size.error(), 2);
  auto vmas = parsed->integer("vmas", 256, 1, 1u << 16);
  if (!vmas) return fail(spec, vmas.error(), 2);
  auto ticks = parsed->integer("ticks", 5, 1, 10000);
  if (!ticks) return fail(spec, ticks.error(), 2);
  daemon::TickBenchOptions o;
  o.sizeBytes = size.value();
  o.vmas = vmas.value();
  o.ticks = static_cast<int>(ticks.value());
  auto rep = daemon::runTickBench(o);
  if (!rep) return fail(spec, rep.error(), rep.error().kind == ErrorKind::Input ? 2 : 1);
  if (parsed->has("json"))
    printJson(o, rep.value());
  else
    printText(o, rep.value());
  return 0;
}

}  // namespace tierd::cli

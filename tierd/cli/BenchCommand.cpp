// `tierctl bench migrate|locate`: the field's standard measurements (tierd/migrate/Bench.h),
// side by side with the naive method in the same run. JSON fields: docs/migrate.md.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/Bench.h"
#include "tierd/sys/Parsers.h"

namespace tierd::cli {
namespace {

std::string fmt(double v, int prec = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

nlohmann::json statsJson(const std::vector<double>& v) {
  auto ms = migrate::meanStd(v);
  return {{"mean", ms.mean}, {"stddev", ms.stddev}, {"runs", v}};
}

// Nodes and runs of the benches: 0 .. 2^20 (runs 0 measures nothing, which is allowed).
constexpr uint64_t kMaxRuns = 1u << 20;

// `tierctl bench migrate --json`: the document of docs/migrate.md.
nlohmann::json migrateJson(const migrate::MigrateBenchOptions& o,
                           const migrate::MigrateBenchReport& r) {
  nlohmann::json j;
  j["page"] = migrate::benchPageName(o.page);
  j["page_size_bytes"] = r.pageSize;
  j["size_bytes"] = o.sizeBytes;
  j["runs"] = o.runs;
  j["call_latency_target_seconds"] = static_cast<double>(o.callLatencyTargetNs) / 1e9;
  j["from"] = o.from;
  j["to"] = o.to;
  j["source_fraction"] = r.sourceFraction;
  j["data_intact"] = r.dataIntact;
  j["intact_per_run"] = r.intact;
  j["hugepages"] = r.hugepageNote;
  j["target_pool"] = o.emptyTargetPool ? "empty" : "reserve";
  for (const auto& [name, m] : r.methods) {
    auto g = migrate::meanStd(m.gibPerS);
    auto c = migrate::meanStd(m.cpuSeconds);
    double gib = static_cast<double>(o.sizeBytes) / static_cast<double>(kGiB);
    j["methods"][name] = {
        {"gib_per_s_mean", g.mean},
        {"gib_per_s_stddev", g.stddev},
        {"gib_per_s", m.gibPerS},
        {"seconds", statsJson(m.seconds)},
        {"kernel_cpu_seconds", statsJson(m.cpuSeconds)},
        {"cpu_seconds_per_gib", c.mean / gib},
        {"addresses", m.addresses},
        {"calls", m.calls},
        {"statuses", m.statuses},
    };
    if (name == "tierd") {
      j["methods"][name]["bytes_moved"] = m.bytesMoved;
      j["methods"][name]["move_call_seconds"] = statsJson(m.moveCallSeconds);
      j["methods"][name]["smaps_seconds"] = statsJson(m.smapsSeconds);
    }
  }
  const auto ratios = migrate::pairedRatios(r.methods.at("tierd"), r.methods.at("raw_single_call"));
  j["tierd_vs_raw"] = {{"per_run", ratios}, {"median", migrate::median(ratios)}};
  return j;
}

// `tierctl bench migrate` without --json: one line per method, the tierd/raw ratio.
void printMigrate(const migrate::MigrateBenchOptions& o, const migrate::MigrateBenchReport& r) {
  std::cout << "bench migrate: " << formatBytes(o.sizeBytes) << " of "
            << migrate::benchPageName(o.page) << " pages, node " << o.from << " -> node " << o.to
            << ", " << o.runs << " runs"
            << " (" << fmt(r.sourceFraction * 100, 1) << "% first-touched on node " << o.from
            << ")\n";
  if (!r.hugepageNote.empty()) std::cout << "hugetlb: " << r.hugepageNote << "\n";
  if (o.from == o.to)
    std::cout << "note: source == target: pages are already there; figures measure the "
                 "per-page walk, not copying\n";
  for (const char* name : {"tierd", "raw_single_call", "per_4k"}) {
    const auto& m = r.methods.at(name);
    auto g = migrate::meanStd(m.gibPerS);
    auto c = migrate::meanStd(m.cpuSeconds);
    std::string st;
    for (const auto& [k, v] : m.statuses)
      st += (st.empty() ? "" : " ") + k + "=" + std::to_string(v);
    std::printf(
        "  %-16s %9s ± %-8s GiB/s  cpu %7s s/GiB  addresses %-8llu calls %-6llu %s\n", name,
        fmt(g.mean).c_str(), fmt(g.stddev).c_str(),
        fmt(c.mean / (static_cast<double>(o.sizeBytes) / static_cast<double>(kGiB)), 4).c_str(),
        static_cast<unsigned long long>(m.addresses), static_cast<unsigned long long>(m.calls),
        st.c_str());
  }
  const auto ratios = migrate::pairedRatios(r.methods.at("tierd"), r.methods.at("raw_single_call"));
  const auto& t = r.methods.at("tierd");
  std::printf(
      "  tierd / raw_single_call, median of the per-run GiB/s ratios: %s; tierd's time "
      "inside move calls %s s of %s s, smaps read before %s s (means)\n",
      fmt(migrate::median(ratios), 3).c_str(),
      fmt(migrate::meanStd(t.moveCallSeconds).mean, 4).c_str(),
      fmt(migrate::meanStd(t.seconds).mean, 4).c_str(),
      fmt(migrate::meanStd(t.smapsSeconds).mean, 4).c_str());
  std::cout << (r.dataIntact ? "data intact" : "FAIL: data changed by a move") << "\n";
}

int benchMigrate(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl bench migrate",
      "usage: tierctl bench migrate [--size 1GiB] [--page 4k|thp|hugetlb-2M|hugetlb-1G] "
      "[--from N] [--to M] [--runs R] [--call-latency DURATION] [--target-pool reserve|empty] "
      "[--json]\n\nMoves a first-touched "
      "anonymous buffer from node "
      "N to node M with "
      "tierd's migrator, one raw move_pages call and one address per 4 KiB, side by side; GiB/s "
      "mean ± stddev; checksum checked after every run.\n",
      {
          {"size", true, "buffer size (default 1GiB; B, KiB, MiB, GiB, TiB as in tierd.toml)",
           "SIZE"},
          {"page", true, "4k | thp | hugetlb-2M | hugetlb-1G (default thp)", "PAGE"},
          {"from", true, "source node (default 0)", "NODE"},
          {"to", true, "target node (default 0)", "NODE"},
          {"runs", true, "measured runs (default 5)", "N"},
          {"call-latency", true,
           "tierd's move_pages call latency target, as [migration] call_latency_target "
           "(default 20ms)",
           "DURATION"},
          {"target-pool", true,
           "reserve (default): free hugetlb pages on --to for the run; empty (hugetlb-2M): none, "
           "so the kernel allocates each destination page outside the pool",
           "reserve|empty"},
          kMigrateJsonOption,
          kSysRootOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  migrate::MigrateBenchOptions o;
  auto size = parsed->size("size", kGiB);
  if (!size) return fail(spec, size.error(), 2);
  auto page = migrate::parseBenchPage(parsed->get("page").value_or("thp"));
  if (!page) return fail(spec, page.error(), 2);
  auto from = parsed->integer("from", 0, 0, kMaxNodeOption);
  if (!from) return fail(spec, from.error(), 2);
  auto to = parsed->integer("to", 0, 0, kMaxNodeOption);
  if (!to) return fail(spec, to.error(), 2);
  auto runs = parsed->integer("runs", 5, 0, kMaxRuns);
  if (!runs) return fail(spec, runs.error(), 2);
  o.sizeBytes = size.value();
  o.page = page.value();
  o.from = static_cast<int>(from.value());
  o.to = static_cast<int>(to.value());
  o.runs = static_cast<int>(runs.value());
  auto latency = parsed->durationNs("call-latency", o.callLatencyTargetNs, 1'000'000'000);
  if (!latency || latency.value() == 0)
    return fail(spec, latency ? Error::input("must be > 0", "--call-latency") : latency.error(), 2);
  o.callLatencyTargetNs = latency.value();
  const std::string pool = parsed->get("target-pool").value_or("reserve");
  if (pool != "reserve" && pool != "empty")
    return fail(spec, Error::input("must be reserve or empty, not '" + pool + "'", "--target-pool"),
                2);
  o.emptyTargetPool = pool == "empty";
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  auto rep = migrate::runMigrateBench(o, root);
  if (!rep) return fail(spec, rep.error(), 1);
  const auto& r = rep.value();
  if (parsed->has("json"))
    std::cout << migrateJson(o, r).dump(2) << "\n";
  else
    printMigrate(o, r);
  return r.dataIntact ? 0 : 1;
}

int benchLocate(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl bench locate",
      "usage: tierctl bench locate [--size 4GiB] [--page 4k|thp] [--runs R] [--json]\n\nNaive "
      "move_pages(nodes=NULL) of every 4 KiB address vs tierd's locate on the same buffer: "
      "times, identical results, speedup.\n",
      {
          {"size", true, "buffer size (default 4GiB; B, KiB, MiB, GiB, TiB as in tierd.toml)",
           "SIZE"},
          {"page", true, "4k | thp (default thp)", "PAGE"},
          {"runs", true, "measured runs (default 5)", "N"},
          kMigrateJsonOption,
          kSysRootOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  migrate::LocateBenchOptions o;
  auto size = parsed->size("size", 4 * kGiB);
  if (!size) return fail(spec, size.error(), 2);
  auto page = migrate::parseBenchPage(parsed->get("page").value_or("thp"));
  if (!page) return fail(spec, page.error(), 2);
  auto runs = parsed->integer("runs", 5, 0, kMaxRuns);
  if (!runs) return fail(spec, runs.error(), 2);
  o.sizeBytes = size.value();
  o.page = page.value();
  o.runs = static_cast<int>(runs.value());
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  auto rep = migrate::runLocateBench(o, root);
  if (!rep) return fail(spec, rep.error(), 1);
  const auto& r = rep.value();
  auto n = migrate::meanStd(r.naiveSeconds);
  auto t = migrate::meanStd(r.tierdSeconds);
  if (parsed->has("json")) {
    nlohmann::json j;
    j["page"] = migrate::benchPageName(o.page);
    j["size_bytes"] = o.sizeBytes;
    j["runs"] = o.runs;
    j["identical"] = r.identical;
    j["speedup"] = r.speedup();
    j["thp_coverage"] = r.thpCoverage;
    j["methods"]["naive_per_4k"] = {{"seconds_mean", n.mean},
                                    {"seconds_stddev", n.stddev},
                                    {"seconds", r.naiveSeconds},
                                    {"queried_pages", r.naiveAddresses},
                                    {"query_calls", 1}};
    j["methods"]["tierd"] = {
        {"seconds_mean", t.mean},           {"seconds_stddev", t.stddev},
        {"seconds", r.tierdSeconds},        {"queried_pages", r.tierdQueriedPages},
        {"query_calls", r.tierdQueryCalls}, {"skipped_bytes", r.tierdSkippedBytes}};
    std::cout << j.dump(2) << "\n";
    return r.identical ? 0 : 1;
  }
  std::cout << "bench locate: " << formatBytes(o.sizeBytes) << " of "
            << migrate::benchPageName(o.page) << " pages (THP coverage "
            << fmt(r.thpCoverage * 100, 1) << "%), " << o.runs << " runs\n";
  std::printf("  naive per-4k   %10s ± %-10s ms  (%llu addresses, 1 call)\n",
              fmt(n.mean * 1e3).c_str(), fmt(n.stddev * 1e3).c_str(),
              static_cast<unsigned long long>(r.naiveAddresses));
  std::printf("  tierd locate   %10s ± %-10s ms  (%llu addresses, %llu calls, %s from numa_maps)\n",
              fmt(t.mean * 1e3).c_str(), fmt(t.stddev * 1e3).c_str(),
              static_cast<unsigned long long>(r.tierdQueriedPages),
              static_cast<unsigned long long>(r.tierdQueryCalls),
              formatBytes(r.tierdSkippedBytes).c_str());
  std::cout << "  identical: " << (r.identical ? "true" : "false")
            << "\n  speedup: " << fmt(r.speedup(), 1) << "x\n";
  return r.identical ? 0 : 1;
}

}  // namespace

int benchCommand(const std::vector<std::string>& args, size_t begin) {
  static const CommandEntry kBenches[] = {
      {"migrate", &benchMigrate, "GiB/s of tierd's migrator vs one raw call vs per-4K calls"},
      {"locate", &benchLocate, "tierd's locate vs the naive per-4K query"},
      {"heat", &benchHeatCommand, "heat model samples per CPU second and bytes per tracked GiB"},
      {"tick", &benchTickCommand,
       "CPU ms of the daemon's tick, many VMAs of THP, with and without changes"},
  };
  return dispatchCommand("tierctl bench", kBenches, args, begin);
}

}  // namespace tierd::cli

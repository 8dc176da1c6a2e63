// tierctl hotness: run a hotness source (or replay a trace) against a process and score the hot
// 2 MiB regions it finds against ground truth (tierd-gups --hot-set-out). Used by the rig's
// `hotness` scenario: precision and recall must both reach 0.8 with DAMON.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "telemetry/hotness/HeatObservation.h"
#include "telemetry/hotness/HeatRegions.h"
#include "telemetry/hotness/SourceNames.h"
#include "telemetry/hotness/Trace.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/Sampling.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/sys/Parsers.h"

namespace tierd::cli {
namespace {

// The DAMON attributes of a live run: DamonConfig's defaults, changed by the --damon-* options.
Result<telemetry::DamonConfig> damonOptions(const ParsedArgs& parsed) {
  telemetry::DamonConfig damon;
  const std::pair<const char*, uint64_t*> knobs[] = {
      {"damon-sample-us", &damon.sampleUs},     {"damon-aggr-us", &damon.aggrUs},
      {"damon-update-us", &damon.updateUs},     {"damon-min-regions", &damon.minRegions},
      {"damon-max-regions", &damon.maxRegions},
  };
  for (const auto& [name, field] : knobs) {
    auto n = parsed.integer(name, *field, 0, UINT64_MAX);
    if (!n) return n.error();
    *field = n.value();
  }
  // At most 2^32 ms: the snapshot interval in nanoseconds stays inside 64 bits.
  auto ms = parsed.integer("damon-snapshot-ms", damon.snapshotNs / 1000000u, 0, 1ull << 32);
  if (!ms) return ms.error();
  damon.snapshotNs = ms.value() * 1000000u;
  return damon;
}

// The perf sources' tuning of a live run: PerfTuning's defaults, changed by --sample-period and
// --cpu-budget-percent.
Result<telemetry::PerfTuning> perfOptions(const ParsedArgs& parsed) {
  telemetry::PerfTuning perf;
  auto period = parsed.integer("sample-period", perf.samplePeriod, 1, UINT32_MAX);
  if (!period) return period.error();
  perf.samplePeriod = period.value();
  if (auto budget = parsed.get("cpu-budget-percent")) {
    char* end = nullptr;
    const double pct = std::strtod(budget->c_str(), &end);
    if (budget->empty() || *end != '\0' || !(pct >= 0.01 && pct <= 100))
      return Error::input("'" + *budget + "': want a number from 0.01 to 100",
                          "--cpu-budget-percent");
    perf.cpuBudget = pct / 100;
  }
  return perf;
}

// What was observed: the heat of the process's regions and where it came from.
struct Observation {
  telemetry::RegionHeatMap heat;
  telemetry::SourceStats stats;
  std::string sourceName;
  uint64_t seconds = 0;  // 0 for a trace
};

void printJson(const Observation& o, pid_t pid, const telemetry::HotSetScore& score,
               const telemetry::DamonConfig& damon) {
  nlohmann::json j = {{"source", o.sourceName},
                      {"pid", pid},
                      {"seconds", o.seconds},
                      {"samples", o.stats.samples},
                      {"lost", o.stats.lost},
                      {"regions_with_heat", o.heat.size()},
                      {"truth_regions", score.actual},
                      {"predicted_regions", score.predicted},
                      {"true_positives", score.truePositive},
                      {"heat_median", score.cut.median},
                      {"heat_mad", score.cut.mad},
                      {"outlier_threshold", score.cut.outlierThreshold},
                      {"cold_level", score.cut.coldLevel},
                      {"hot_level", score.cut.hotLevel},
                      {"hot_threshold", score.cut.threshold},
                      {"precision", score.precision},
                      {"recall", score.recall}};
  if (telemetry::sourceKindOf(o.sourceName) == telemetry::SourceKind::DamonVaddr)
    j["damon"] = {{"sample_us", damon.sampleUs},     {"aggr_us", damon.aggrUs},
                  {"update_us", damon.updateUs},     {"min_regions", damon.minRegions},
                  {"max_regions", damon.maxRegions}, {"snapshot_ns", damon.snapshotNs}};
  std::cout << j.dump(2) << "\n";
}

void printText(const Observation& o, pid_t pid, const telemetry::HotSetScore& score) {
  std::cout << "source " << o.sourceName << ", pid " << pid << ", " << o.stats.samples
            << " samples, " << o.heat.size() << " regions with heat\n"
            << "hot 2 MiB regions: truth " << score.actual << ", predicted " << score.predicted
            << ", correct " << score.truePositive << "\nhot: heat > " << score.cut.threshold
            << " (outlier above median " << score.cut.median << " + 3 x 1.4826 x MAD "
            << score.cut.mad << " = " << score.cut.outlierThreshold << ", and nearer the hot level "
            << score.cut.hotLevel << " than the cold level " << score.cut.coldLevel
            << ")\nprecision " << score.precision << "\nrecall " << score.recall << "\n";
}

}  // namespace

int hotnessCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl hotness",
      "usage: tierctl hotness --source damon --pid PID --seconds N --truth FILE [--json]\n"
      "       tierctl hotness --trace FILE --truth FILE [--json]\n\n"
      "Finds the hot 2 MiB regions from the heat alone (outliers above median + 3 x 1.4826 x MAD "
      "that are nearer the hot than the cold level; telemetry/hotness/HeatRegions.h) and prints "
      "precision and recall against the truth.\n",
      {
          {"source", true, "damon (damon-vaddr), perf-pebs, perf-ibs, perf-sw-page-faults", "NAME"},
          {"pid", true, "process to observe (default: the pid in the truth file)", "PID"},
          {"seconds", true, "how long to observe (default 30)", "N"},
          {"truth", true, "hot-set file: 'pid N' then one start-end hex range per line", "FILE"},
          {"trace", true, "score a recorded trace instead of observing live", "FILE"},
          {"json", false, "print JSON"},
          {"heat-out", true, "write every region's heat, truth and verdict to FILE (hottest first)",
           "FILE"},
          {"damon-sample-us", true, "DAMON sampling interval, us (default 5000)", "US"},
          {"damon-aggr-us", true, "DAMON aggregation interval, us (default 100000)", "US"},
          {"damon-update-us", true, "DAMON operations update interval, us (default 1000000)", "US"},
          {"damon-min-regions", true, "DAMON minimum number of regions (default 10)", "N"},
          {"damon-max-regions", true, "DAMON maximum number of regions (default 1000)", "N"},
          {"damon-snapshot-ms", true, "how often to read DAMON's regions, ms (default 1000)", "MS"},
          {"sample-period", true,
           "initial events per sample of perf-pebs and perf-ibs, then adapted to the CPU budget "
           "([sampling] sample_period; default 10007)",
           "N"},
          {"cpu-budget-percent", true,
           "CPU a perf source's draining may use, % of one CPU, 0.01-100 ([sampling] "
           "cpu_budget_percent; default 1)",
           "P"},
          kSysRootOption,
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  if (!parsed->has("truth") || parsed->has("trace") == parsed->has("source")) {
    std::cerr
        << "tierctl hotness: need --truth FILE and exactly one of --source NAME or --trace FILE\n";
    return 2;
  }
  auto truthText = readInputFile(*parsed->get("truth"));
  if (!truthText) {
    return fail(spec, truthText.error(), 1);
  }
  auto truth = telemetry::parseHotSet(truthText.value(), *parsed->get("truth"));
  if (!truth) {
    return fail(spec, truth.error(), 2);
  }
  pid_t pid = truth->pid;
  if (parsed->has("pid")) {
    auto p = parsed->pid("pid");
    if (!p) return fail(spec, p.error(), 2);
    pid = p.value();
  }
  auto damonArg = damonOptions(*parsed);
  if (!damonArg) return fail(spec, damonArg.error(), 2);
  const telemetry::DamonConfig damon = damonArg.value();
  auto perfArg = perfOptions(*parsed);
  if (!perfArg) return fail(spec, perfArg.error(), 2);
  const telemetry::PerfTuning perf = perfArg.value();
  Observation o;
  if (auto tracePath = parsed->get("trace")) {
    auto text = readInputFile(*tracePath);
    if (!text) {
      return fail(spec, text.error(), 1);
    }
    auto trace = telemetry::parseTrace(text.value(), *tracePath);
    if (!trace) {
      return fail(spec, trace.error(), 2);
    }
    o.sourceName = "replay:" + trace->header.source;
    o.stats = telemetry::replayHeat(std::move(trace.value()), pid, o.heat);
  } else {
    std::string only = *parsed->get("source");
    const telemetry::SourceInfo& damonVaddr =
        telemetry::sourceInfo(telemetry::SourceKind::DamonVaddr);
    if (only == damonVaddr.configName) only = damonVaddr.name;
    auto secs = parsed->integer("seconds", 30, 1, 1ull << 32);
    if (!secs) return fail(spec, secs.error(), 2);
    o.seconds = secs.value();
    sys::SysRoot root(parsed->get("sys-root").value_or("/"));
    telemetry::SysRootDamonFs fs(root);
    telemetry::LinuxPerfEventOpener opener;
    auto probe = telemetry::probeSampling(root, fs, ::geteuid() == 0);
    telemetry::SamplingTarget target;
    target.pid = pid;
    // Before the source starts: a signal from now on stops it cleanly (its kdamond removed).
    StopOnSignals signals;
    telemetry::DamonPool pool(fs, tierctlDamonPool(root));
    auto started =
        startBestSource(probe, target, only, opener, fs, root, std::cerr, damon, &pool, perf);
    if (!started) {
      return fail(spec, started.error(), 1);
    }
    o.sourceName = started->source->name();
    if (Status s = telemetry::observeHeat(*started->source, pid, o.seconds, o.heat, o.stats,
                                          &StopOnSignals::stopRequested());
        !s) {
      std::cerr << "tierctl hotness: " << s.error().describe() << "\n";
      return 1;
    }
  }
  const auto score = telemetry::scoreHotSet(o.heat, truth.value());
  if (auto heatOut = parsed->get("heat-out")) {
    std::ofstream out(*heatOut);
    telemetry::writeHeatRanking(out, o.heat, truth.value(), score);
    if (!out) {
      std::cerr << "tierctl hotness: cannot write " << *heatOut << "\n";
      return 1;
    }
  }
  if (parsed->has("json"))
    printJson(o, pid, score, damon);
  else
    printText(o, pid, score);
  return 0;
}

}  // namespace tierd::cli

// tierctl bench heat: how fast the heat model ingests samples and how much memory it takes per
// tracked GiB (policy/HeatModel.h), on 64 GiB of tracked 2 MiB regions and a zipfian stream.
// The measuring loop is policy/HeatBench.h; this file parses options and prints.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "policy/HeatBench.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/Bench.h"

namespace tierd::cli {

int benchHeatCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl bench heat",
      "usage: tierctl bench heat [--json]\n\nSamples ingested per second per core by the heat "
      "model and bytes of model per tracked GiB, for a zipfian stream over 2 MiB regions (fixed "
      "seed).\n",
      {
          {"json", false, "print the figures as JSON"},
          {"gib", true, "tracked memory in GiB (default 64)", "N"},
          {"samples", true, "samples per run (default 4000000)", "N"},
          {"runs", true, "runs (default 5)", "N"},
          {"zipf", true, "zipf exponent s (default 0.99)", "S"},
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  auto gib = parsed->integer("gib", 64, 1, 4096);
  auto samples = parsed->integer("samples", 4000000, 1000, 1000000000);
  auto runs = parsed->integer("runs", 5, 1, 100);
  double zipfS = 0.99;
  if (auto z = parsed->get("zipf")) {
    std::istringstream in(*z);
    if (!(in >> zipfS) || !in.eof() || zipfS < 0 || zipfS > 5) {
      std::cerr << "tierctl bench heat: --zipf: expected a number in 0..5, got '" << *z << "'\n";
      return 2;
    }
  }
  for (auto* r : {&gib, &samples, &runs})
    if (!*r) {
      std::cerr << "tierctl bench heat: " << r->error().describe() << "\n";
      return 2;
    }

  policy::HeatBenchOptions options;
  options.gib = *gib;
  options.samples = *samples;
  options.runs = *runs;
  options.zipfS = zipfS;
  const policy::HeatBenchReport report = policy::runHeatBench(options);
  const uint64_t regions = report.regions;
  const uint64_t modelBytes = report.modelBytes, tracked = report.trackedBytes;
  const migrate::MeanStd rate = migrate::meanStd(report.cpuRates);
  const migrate::MeanStd wallRate = migrate::meanStd(report.wallRates);
  const migrate::MeanStd decay = migrate::meanStd(report.decayNsPerRegion);
  double perGiB = static_cast<double>(modelBytes) / (static_cast<double>(tracked) / kGiB);
  if (parsed->has("json")) {
    nlohmann::json j = {
        {"tracked_bytes", tracked},
        {"regions", regions},
        {"samples_per_run", *samples},
        {"runs", *runs},
        {"zipf_s", zipfS},
        {"ingest_samples_per_cpu_second", {{"mean", rate.mean}, {"stddev", rate.stddev}}},
        {"ingest_samples_per_wall_second", {{"mean", wallRate.mean}, {"stddev", wallRate.stddev}}},
        {"decay_ns_per_region", {{"mean", decay.mean}, {"stddev", decay.stddev}}},
        {"model_bytes", modelBytes},
        {"model_bytes_per_tracked_gib", perGiB},
        {"target_bytes_per_tracked_gib", 32 * kKiB},
    };
    std::cout << j.dump(2) << "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof line,
                  "heat model: %llu regions (%s tracked), zipf s=%.2f, %llu samples x %llu runs\n",
                  static_cast<unsigned long long>(regions), formatBytes(tracked).c_str(), zipfS,
                  static_cast<unsigned long long>(*samples),
                  static_cast<unsigned long long>(*runs));
    std::cout << line;
    std::snprintf(line, sizeof line, "  ingest: %.3g ± %.2g samples per CPU second (one core)\n",
                  rate.mean, rate.stddev);
    std::cout << line;
    std::snprintf(line, sizeof line, "  decay:  %.1f ± %.1f ns per region\n", decay.mean,
                  decay.stddev);
    std::cout << line;
    std::snprintf(line, sizeof line,
                  "  memory: %s of model, %.0f bytes per tracked GiB (target <= %llu)\n",
                  formatBytes(modelBytes).c_str(), perGiB, 32ULL * kKiB);
    std::cout << line;
  }
  return 0;
}

}  // namespace tierd::cli

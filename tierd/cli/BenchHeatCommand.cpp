// tierctl bench heat: how fast the heat model ingests samples and how much memory it takes per
// tracked GiB (policy/HeatModel.h), on 64 GiB of tracked 2 MiB regions and a zipfian stream.
#include <time.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "policy/HeatModel.h"
#include "policy/Zipf.h"
#include "telemetry/metrics/CpuTime.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Units.h"

namespace tierd::cli {
namespace {

struct MeanSd {
  double mean = 0, sd = 0;
};
MeanSd meanSd(const std::vector<double>& v) {
  MeanSd m;
  if (v.empty()) return m;
  m.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v)
    ss += (x - m.mean) * (x - m.mean);
  m.sd = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0;
  return m;
}

}  // namespace

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

  using namespace tierd::policy;
  const uint64_t regions = *gib * kGiB / (2 * kMiB);
  const uint64_t base = 0x7f0000000000ull;
  const pid_t pid = 4242;
  // The stream: zipfian ranks scattered over the regions by an odd multiplier (hot regions are
  // not adjacent), a uniform offset inside the region, 100 us between samples.
  ZipfGenerator zipf(regions, zipfS, 0x7e2d);
  SplitMix64 rng(42);
  std::vector<AccessSample> stream(*samples);
  for (uint64_t i = 0; i < *samples; ++i) {
    uint64_t region = (zipf.next() * 0x9e3779b1ull) % regions;
    stream[i].pid = pid;
    stream[i].tid = pid;
    stream[i].vaddr = base + region * 2 * kMiB + rng.below(2 * kMiB);
    stream[i].timeNs = (i + 1) * 100000;
  }
  const size_t kBatch = 65536;
  std::vector<double> rates, wallRates, decayNsPerRegion;
  size_t modelBytes = 0, tracked = 0;
  for (uint64_t run = 0; run < *runs; ++run) {
    HeatModel model;
    model.setWorkload(0, HeatParams{10'000'000'000, 30'000'000'000});
    model.assignPid(pid, 0);
    model.setMappings(pid, {Mapping{base, base + *gib * kGiB, 2 * kMiB, false}});
    std::vector<std::pair<uint64_t, NodeId>> where;
    where.reserve(regions);
    for (uint64_t r = 0; r < regions; ++r)
      where.push_back({base + r * 2 * kMiB, r % 4 ? 1 : 0});
    model.setLocations(pid, std::move(where));
    double cpu0 = telemetry::threadCpuSeconds();
    auto wall0 = std::chrono::steady_clock::now();
    for (size_t off = 0; off < stream.size(); off += kBatch) {
      size_t n = std::min(kBatch, stream.size() - off);
      model.ingest(std::span<const AccessSample>(stream.data() + off, n),
                   stream[off + n - 1].timeNs);
    }
    double cpu = telemetry::threadCpuSeconds() - cpu0;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    rates.push_back(static_cast<double>(stream.size()) / std::max(cpu, 1e-9));
    wallRates.push_back(static_cast<double>(stream.size()) / std::max(wall, 1e-9));
    double d0 = telemetry::threadCpuSeconds();
    model.decay(stream.back().timeNs + 1'000'000'000);
    double d = telemetry::threadCpuSeconds() - d0;
    decayNsPerRegion.push_back(d * 1e9 /
                               static_cast<double>(std::max<size_t>(1, model.regionCount())));
    modelBytes = model.modelBytes();
    tracked = model.trackedBytes();
  }
  MeanSd rate = meanSd(rates), wallRate = meanSd(wallRates), decay = meanSd(decayNsPerRegion);
  double perGiB = static_cast<double>(modelBytes) / (static_cast<double>(tracked) / kGiB);
  if (parsed->has("json")) {
    nlohmann::json j = {
        {"tracked_bytes", tracked},
        {"regions", regions},
        {"samples_per_run", *samples},
        {"runs", *runs},
        {"zipf_s", zipfS},
        {"ingest_samples_per_cpu_second", {{"mean", rate.mean}, {"stddev", rate.sd}}},
        {"ingest_samples_per_wall_second", {{"mean", wallRate.mean}, {"stddev", wallRate.sd}}},
        {"decay_ns_per_region", {{"mean", decay.mean}, {"stddev", decay.sd}}},
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
                  rate.mean, rate.sd);
    std::cout << line;
    std::snprintf(line, sizeof line, "  decay:  %.1f ± %.1f ns per region\n", decay.mean, decay.sd);
    std::cout << line;
    std::snprintf(
        line, sizeof line, "  memory: %s of model, %.0f bytes per tracked GiB (target <= %llu)\n",
        formatBytes(modelBytes).c_str(), perGiB, static_cast<unsigned long long>(32 * kKiB));
    std::cout << line;
  }
  return 0;
}

}  // namespace tierd::cli

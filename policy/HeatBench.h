#pragma once
/// \file
/// The heat-model bench of `tierctl bench heat`: how fast HeatModel (HeatModel.h) ingests
/// samples and how much memory it takes per tracked GiB, on `gib` GiB of tracked 2 MiB regions
/// and a zipfian sample stream with fixed seeds. The measuring loop lives here, as the migration
/// benches' does in tierd/migrate/Bench.h; the command parses options and prints.

#include <cstdint>
#include <vector>

namespace tierd::policy {

/// Options of `tierctl bench heat` (the command checks their ranges).
struct HeatBenchOptions {
  uint64_t gib = 64;             ///< tracked memory, GiB (one process, one mapping)
  uint64_t samples = 4'000'000;  ///< samples per run
  uint64_t runs = 5;             ///< runs, each on a fresh model
  double zipfS = 0.99;           ///< zipf exponent of the region ranks
};

/// What the bench measured: one value per run, and the model's size after the last run.
struct HeatBenchReport {
  HeatBenchOptions options;
  uint64_t regions = 0;                  ///< tracked 2 MiB regions: gib GiB / 2 MiB
  std::vector<double> cpuRates;          ///< samples ingested per second of the thread's CPU
  std::vector<double> wallRates;         ///< samples ingested per wall-clock second
  std::vector<double> decayNsPerRegion;  ///< thread CPU ns of one decay() per region
  uint64_t modelBytes = 0;               ///< HeatModel::modelBytes()
  uint64_t trackedBytes = 0;             ///< HeatModel::trackedBytes()
};

/// Runs the bench on the calling thread (reads its CPU clock and the monotonic clock). The
/// stream: zipfian ranks scattered over the regions by an odd multiplier (hot regions are not
/// adjacent), a uniform offset inside the region, 100 us between samples, ingested in batches
/// of 65536; every fourth region on node 0, the rest on node 1.
HeatBenchReport runHeatBench(const HeatBenchOptions& options);

}  // namespace tierd::policy

#include "policy/HeatBench.h"

#include <algorithm>
#include <span>
#include <utility>

#include "policy/HeatModel.h"
#include "policy/Zipf.h"
#include "tierd/core/Clock.h"
#include "tierd/core/Units.h"

namespace tierd::policy {
namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr pid_t kPid = 4242;

double threadCpuSeconds() {
  return static_cast<double>(threadCpuNs()) * 1e-9;
}

// The sample stream of the file comment (fixed seeds: the same stream every run and every time).
std::vector<AccessSample> zipfStream(uint64_t regions, const HeatBenchOptions& o) {
  ZipfGenerator zipf(regions, o.zipfS, 0x7e2d);
  SplitMix64 rng(42);
  std::vector<AccessSample> stream(o.samples);
  for (uint64_t i = 0; i < o.samples; ++i) {
    uint64_t region = (zipf.next() * 0x9e3779b1ull) % regions;
    stream[i].pid = kPid;
    stream[i].tid = kPid;
    stream[i].vaddr = kBase + region * 2 * kMiB + rng.below(2 * kMiB);
    stream[i].timeNs = (i + 1) * 100000;
  }
  return stream;
}

// One run on a fresh model: ingest the stream, then one decay; adds its figures to `r`.
void runOnce(const std::vector<AccessSample>& stream, HeatBenchReport& r) {
  const size_t kBatch = 65536;
  HeatModel model;
  model.setWorkload(0, HeatParams{10'000'000'000, 30'000'000'000});
  model.assignPid(kPid, 0);
  model.setMappings(kPid, {Mapping{kBase, kBase + r.options.gib * kGiB, 2 * kMiB, false}});
  std::vector<std::pair<uint64_t, NodeId>> where;
  where.reserve(r.regions);
  for (uint64_t i = 0; i < r.regions; ++i)
    where.push_back({kBase + i * 2 * kMiB, i % 4 ? 1 : 0});
  model.setLocations(kPid, std::move(where));
  double cpu0 = threadCpuSeconds();
  const uint64_t wall0 = monotonicNs();
  for (size_t off = 0; off < stream.size(); off += kBatch) {
    size_t n = std::min(kBatch, stream.size() - off);
    model.ingest(std::span<const AccessSample>(stream.data() + off, n), stream[off + n - 1].timeNs);
  }
  double cpu = threadCpuSeconds() - cpu0;
  double wall = static_cast<double>(monotonicNs() - wall0) * 1e-9;
  r.cpuRates.push_back(static_cast<double>(stream.size()) / std::max(cpu, 1e-9));
  r.wallRates.push_back(static_cast<double>(stream.size()) / std::max(wall, 1e-9));
  double d0 = threadCpuSeconds();
  model.decay(stream.back().timeNs + 1'000'000'000);
  double d = threadCpuSeconds() - d0;
  r.decayNsPerRegion.push_back(d * 1e9 /
                               static_cast<double>(std::max<size_t>(1, model.regionCount())));
  r.modelBytes = model.modelBytes();
  r.trackedBytes = model.trackedBytes();
}

}  // namespace

HeatBenchReport runHeatBench(const HeatBenchOptions& options) {
  HeatBenchReport r;
  r.options = options;
  r.regions = options.gib * kGiB / (2 * kMiB);
  const std::vector<AccessSample> stream = zipfStream(r.regions, options);
  for (uint64_t run = 0; run < options.runs; ++run)
    runOnce(stream, r);
  return r;
}

}  // namespace tierd::policy

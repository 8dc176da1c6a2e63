#include "telemetry/hotness/HeatObservation.h"

#include <time.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "telemetry/hotness/SourceNames.h"
#include "tierd/core/Clock.h"

namespace tierd::telemetry {

Status observeHeat(HotnessSource& source, pid_t pid, uint64_t seconds, RegionHeatMap& heat,
                   SourceStats& stats, const std::atomic<bool>* stop) {
  const bool weighted = source.weightKind() == WeightKind::Weighted;
  const uint64_t end = monotonicNs() + seconds * 1000000000u;
  for (;;) {
    const uint64_t now = monotonicNs();
    auto batch = source.drain(now);
    if (!batch) {
      source.stop();
      return batch.error();
    }
    addSamples(heat, batch.value(), pid, weighted);
    if (now >= end || (stop && stop->load())) break;
    timespec ts{0, static_cast<long>(kObservePollNs)};
    ::nanosleep(&ts, nullptr);
  }
  source.stop();
  stats = source.stats();
  return Ok{};
}

SourceStats replayHeat(Trace trace, pid_t pid, RegionHeatMap& heat) {
  const bool weighted = weightKindOf(trace.header.source) == WeightKind::Weighted;
  ReplaySource replay(std::move(trace));
  auto all = replay.drain(UINT64_MAX);
  addSamples(heat, all.value(), pid, weighted);
  return replay.stats();
}

void writeHeatRanking(std::ostream& out, const RegionHeatMap& heat, const HotSetTruth& truth,
                      const HotSetScore& score) {
  const auto actual = truthRegions(truth);
  std::vector<std::pair<uint64_t, uint64_t>> ranked(heat.begin(), heat.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "# region heat truth(1=hot) called(1=hot); threshold " << score.cut.threshold << "\n";
  for (const auto& [region, h] : ranked)
    out << "0x" << std::hex << region << std::dec << " " << h << " "
        << std::binary_search(actual.begin(), actual.end(), region) << " "
        << std::binary_search(score.cut.hot.begin(), score.cut.hot.end(), region) << "\n";
}

}  // namespace tierd::telemetry

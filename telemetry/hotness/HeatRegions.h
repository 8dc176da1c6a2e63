#pragma once
/// \file
/// Per-2 MiB heat (docs/architecture.md, principle 3: the unit of hotness is the 2 MiB region) and
/// scoring a detected hot set against ground truth (tierd-gups writes its hot set to a file).
///
/// Which regions are hot is decided from the heat distribution alone, never from the truth, in
/// two steps:
/// 1. Outliers: a region may be hot only when its heat is an outlier above the bulk of the
///    process's regions, heat > median + kHotMadCut x 1.4826 x MAD (MAD = median of
///    |heat - median|): Hampel's identifier, a robust z-score above 3 (Leys et al. 2013,
///    "Detecting outliers: do not use standard deviation around the mean, use absolute deviation
///    around the median"); 1.4826 scales the MAD to a standard deviation for normal noise.
///    Why: with huge pages cold memory still looks accessed in most DAMON checks (~73% at 5 ms
///    for a GUPS table in the rig: docs/tiering.md), so a fixed threshold on access frequency calls
///    everything hot, while the hot set sits above the cold bulk. Median and MAD ignore the
///    minority (the hot set itself, and rarely touched mappings such as libraries below the bulk),
///    so neither a second cold mode nor the hot set's size moves the cut; a mean/stddev or Otsu cut
///    is pulled by exactly those. It assumes the hot set is less than half of the regions with
///    heat. When the heats do not spread (MAD 0, e.g. every region saturated) only regions above
///    the median qualify: with nothing standing out nothing is called hot.
/// 2. Nearest level: the outliers include the hot set's neighbours, which a monitor with coarse
///    regions (DAMON's region boundaries are not 2 MiB aligned) or skid blurs toward hot. So the
///    regions are split in two by 1-D two-medians (Lloyd's iteration seeded with step 1): a region
///    is hot when its heat is nearer the hot level (median heat of the hot regions) than the cold
///    level (median of the rest), i.e. above their midpoint, and is still an outlier of step 1.
///    It converges in a few iterations (at most 100 are run).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/core/Units.h"

namespace tierd::telemetry {

/// The heat unit: 2 MiB, aligned.
inline constexpr uint64_t kHeatRegionBytes = 2 * kMiB;

/// Heat of a process's regions: 2 MiB-aligned start address -> summed sample weight.
using RegionHeatMap = std::map<uint64_t, uint64_t>;

/// Adds each sample of `pid` (all pids when 0) to its 2 MiB region: 1 per sample for sampled
/// sources (counts accesses; latency weights would favour slow memory, not hot memory), or the
/// sample's weight when `useWeight` (DAMON samples carry nr_accesses as weight).
void addSamples(RegionHeatMap& heat, const std::vector<AccessSample>& samples, pid_t pid = 0,
                bool useWeight = false);

/// Ground truth: a process and its hot address ranges [start, end).
struct HotSetTruth {
  pid_t pid = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
};

/// Parses a hot-set file: a line "pid N", then one "start-end" per line in hex (with or without
/// 0x), as tierd-gups writes it. '#' starts a comment. Errors name `context`:line.
Result<HotSetTruth> parseHotSet(std::string_view text, const std::string& context);

/// The 2 MiB regions (aligned starts) fully or partly covered by the truth ranges.
std::vector<uint64_t> truthRegions(const HotSetTruth& truth);

/// The scale factor of the MAD cut (see the file comment): 3 robust standard deviations.
inline constexpr double kHotMadCut = 3.0;

/// The hot regions of a heat map and the statistics of the cut (see the file comment).
struct HotCut {
  double median = 0;            ///< median heat of the regions in the map
  double mad = 0;               ///< median absolute deviation from it
  double outlierThreshold = 0;  ///< step 1: median + kHotMadCut x 1.4826 x mad
  double coldLevel = 0;         ///< step 2: median heat of the regions called cold
  double hotLevel = 0;          ///< step 2: median heat of the regions called hot (0: none)
  double threshold = 0;  ///< max(outlierThreshold, (coldLevel + hotLevel) / 2); hot: heat above
  std::vector<uint64_t> hot;  ///< aligned starts of the hot regions, ascending
};

/// Finds the hot regions of `heat` (regions with heat 0 count as cold members of the bulk).
HotCut findHotRegions(const RegionHeatMap& heat);

/// Precision and recall of the predicted hot regions.
struct HotSetScore {
  HotCut cut;            ///< how the regions were called hot
  size_t actual = 0;     ///< regions in the truth
  size_t predicted = 0;  ///< regions called hot by findHotRegions
  size_t truePositive = 0;
  double precision = 0;  ///< truePositive / predicted (0 when nothing predicted)
  double recall = 0;     ///< truePositive / actual
};

/// Scores the hot regions findHotRegions(heat) calls against `truth`.
HotSetScore scoreHotSet(const RegionHeatMap& heat, const HotSetTruth& truth);

}  // namespace tierd::telemetry

#include "telemetry/hotness/HeatRegions.h"

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

void addSamples(RegionHeatMap& heat, const std::vector<AccessSample>& samples, pid_t pid,
                bool useWeight) {
  for (const auto& s : samples)
    if (pid == 0 || s.pid == pid)
      heat[s.vaddr & ~(kHeatRegionBytes - 1)] += useWeight ? s.weight : 1;
}

namespace {

bool parseHexWord(std::string_view s, uint64_t& v) {
  if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0) s.remove_prefix(2);
  auto n = sys::parseHexDigits(s, /*upperOk=*/true);
  if (n) v = *n;
  return n.has_value();
}

}  // namespace

Result<HotSetTruth> parseHotSet(std::string_view text, const std::string& context) {
  HotSetTruth t;
  std::istringstream in{std::string(text)};
  std::string line;
  size_t n = 0;
  bool havePid = false;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = context + ":" + std::to_string(n);
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string a, b;
    words >> a >> b;
    if (a.empty()) continue;
    if (a == "pid") {
      auto v = tierd::parseU64InRange(b, 1, std::numeric_limits<pid_t>::max(), where);
      if (!v) return Error::input("expected 'pid N', got '" + line + "'", where);
      t.pid = static_cast<pid_t>(*v);
      havePid = true;
      continue;
    }
    size_t dash = a.find('-');
    uint64_t s = 0, e = 0;
    if (!b.empty() || dash == std::string::npos || !parseHexWord(a.substr(0, dash), s) ||
        !parseHexWord(a.substr(dash + 1), e) || e <= s)
      return Error::input("expected 'start-end' in hex with end > start, got '" + line + "'",
                          where);
    t.ranges.push_back({s, e});
  }
  if (!havePid) return Error::input("no 'pid N' line", context);
  return t;
}

std::vector<uint64_t> truthRegions(const HotSetTruth& truth) {
  std::set<uint64_t> regions;
  for (const auto& [s, e] : truth.ranges)
    for (uint64_t r = s & ~(kHeatRegionBytes - 1); r < e; r += kHeatRegionBytes)
      regions.insert(r);
  return {regions.begin(), regions.end()};
}

namespace {

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

}  // namespace

HotCut findHotRegions(const RegionHeatMap& heat) {
  HotCut cut;
  std::vector<double> values;
  values.reserve(heat.size());
  for (const auto& [region, h] : heat)
    values.push_back(static_cast<double>(h));
  cut.median = medianOf(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values)
    deviations.push_back(v > cut.median ? v - cut.median : cut.median - v);
  cut.mad = medianOf(std::move(deviations));
  cut.outlierThreshold = cut.median + kHotMadCut * 1.4826 * cut.mad;
  // Two medians (1-D k-medians, k = 2, Lloyd's iteration) seeded with the outliers: each region
  // joins the nearer level; the cut never drops below the outlier threshold.
  double threshold = cut.outlierThreshold;
  for (int iteration = 0; iteration < 100; ++iteration) {
    std::vector<double> cold, hot;
    for (double v : values)
      (v > threshold ? hot : cold).push_back(v);
    if (hot.empty()) break;
    cut.coldLevel = medianOf(std::move(cold));
    cut.hotLevel = medianOf(std::move(hot));
    const double next = std::max(cut.outlierThreshold, (cut.coldLevel + cut.hotLevel) / 2);
    if (next == threshold) break;
    threshold = next;
  }
  cut.threshold = threshold;
  for (const auto& [region, h] : heat)  // std::map: ascending addresses
    if (static_cast<double>(h) > cut.threshold) cut.hot.push_back(region);
  return cut;
}

HotSetScore scoreHotSet(const RegionHeatMap& heat, const HotSetTruth& truth) {
  HotSetScore score;
  const std::vector<uint64_t> actual = truthRegions(truth);
  score.actual = actual.size();
  score.cut = findHotRegions(heat);
  score.predicted = score.cut.hot.size();
  for (uint64_t region : score.cut.hot)
    if (std::binary_search(actual.begin(), actual.end(), region)) ++score.truePositive;
  score.precision = score.predicted ? double(score.truePositive) / double(score.predicted) : 0;
  score.recall = score.actual ? double(score.truePositive) / double(score.actual) : 0;
  return score;
}

}  // namespace tierd::telemetry

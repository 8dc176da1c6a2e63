#pragma once
/// \file
/// The hotness-source vocabulary: every spelling of one source in one table. A source has a name
/// (HotnessSource::name(), the trace header's `source`, `tierctl sampling` output, log lines such
/// as "sampled by damon-vaddr" and "[pid N damon-vaddr ...]"), a `source` label in the metrics, a
/// tierd_capability flag, the `[sampling] source` value that selects it and a weight kind (how
/// the heat model counts its samples). Code decides by SourceKind or WeightKind, never by
/// comparing names.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace tierd::telemetry {

/// How the heat model counts a source's AccessSamples (HotnessSource::weightKind()).
enum class WeightKind {
  PerSample,  ///< every sample is one observed access (perf PEBS/IBS, software page faults)
  Weighted,   ///< AccessSample::weight is the number of accesses it stands for (DAMON: the
              ///< region's nr_accesses per snapshot)
};

/// The hotness sources tierd knows.
enum class SourceKind {
  PerfPebs,      ///< Intel PEBS memory sampling through perf_event
  PerfIbs,       ///< AMD IBS op sampling through perf_event
  PerfSoftware,  ///< software page-fault sampling (PERF_COUNT_SW_PAGE_FAULTS), the fallback
  DamonVaddr,    ///< DAMON virtual-address monitoring of one pid
  Replay,        ///< a recorded trace played back (`[sampling] trace`)
};

/// One row of the vocabulary.
struct SourceInfo {
  SourceKind kind;
  /// HotnessSource::name(), trace header `source`, probe output and log lines.
  std::string_view name;
  /// The `source` label of the sampler metrics (tierd_sampler_*): the name itself.
  std::string_view metricLabel;
  /// The tierd_capability{capability} flag of the machine feature it needs ("" = none): the
  /// name with '_' for '-', as the flag's other values are spelled.
  std::string_view capability;
  /// The `[sampling] source` value that selects it (PEBS and IBS share "perf": the CPU decides;
  /// DAMON's is "damon").
  std::string_view configName;
  /// How its samples count. A replayed trace counts one per sample in the daemon; the simulator
  /// and `tierctl hotness --trace` weigh by the recorded source (weightKindOf(header.source)).
  WeightKind weight;
};

/// The vocabulary, in the order `auto` prefers them (best first; replay
/// is never chosen by auto).
inline constexpr std::array<SourceInfo, 5> kSources = {{
    {SourceKind::PerfPebs, "perf-pebs", "perf-pebs", "perf_pebs", "perf", WeightKind::PerSample},
    {SourceKind::PerfIbs, "perf-ibs", "perf-ibs", "perf_ibs", "perf", WeightKind::PerSample},
    {SourceKind::DamonVaddr, "damon-vaddr", "damon-vaddr", "damon_vaddr", "damon",
     WeightKind::Weighted},
    {SourceKind::PerfSoftware, "perf-sw-page-faults", "perf-sw-page-faults", "perf_sw_page_faults",
     "perf-sw-page-faults", WeightKind::PerSample},
    {SourceKind::Replay, "replay", "replay", "", "replay", WeightKind::PerSample},
}};

/// The row of `k`.
constexpr const SourceInfo& sourceInfo(SourceKind k) {
  for (const SourceInfo& s : kSources)
    if (s.kind == k) return s;
  return kSources.back();  // unreachable: every SourceKind has a row
}

/// The kind whose name() is `name`; nullopt for names tierd does not know.
constexpr std::optional<SourceKind> sourceKindOf(std::string_view name) {
  for (const SourceInfo& s : kSources)
    if (s.name == name) return s.kind;
  return std::nullopt;
}

/// The weight kind of the source named `name` (a trace header's `source`); PerSample for names
/// tierd does not know.
constexpr WeightKind weightKindOf(std::string_view name) {
  const auto k = sourceKindOf(name);
  return k ? sourceInfo(*k).weight : WeightKind::PerSample;
}

}  // namespace tierd::telemetry

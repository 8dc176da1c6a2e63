#include "policy/ConfigFormat.h"

#include <toml++/toml.h>
#include <sstream>

#include "policy/ConfigUnits.h"

namespace tierd::policy {

const char* sampleSourceName(SampleSource s) {
  switch (s) {
    case SampleSource::Auto:
      return "auto";
    case SampleSource::Perf:
      return "perf";
    case SampleSource::Damon:
      return "damon";
    case SampleSource::Replay:
      return "replay";
    case SampleSource::PerfSwPageFaults:
      return "perf-sw-page-faults";
  }
  return "?";
}

const char* pageGranularityName(PageGranularity g) {
  return g == PageGranularity::Base ? "base" : "huge";
}

uint64_t ByteAmount::resolve(uint64_t totalBytes) const {
  if (!isPercent) return bytes;
  long double v = static_cast<long double>(totalBytes) * static_cast<long double>(percent) / 100.0L;
  return v <= 0 ? 0 : static_cast<uint64_t>(v);
}

namespace {

std::string amountText(const ByteAmount& a) {
  return a.isPercent ? formatPercent(a.percent) : formatByteSize(a.bytes);
}

toml::table toTable(const CompiledConfig& cfg) {
  toml::table root;
  root.insert("daemon",
              toml::table{{"interval", formatDuration(cfg.daemon.intervalNs)},
                          {"metrics_listen", cfg.daemon.metricsListen},
                          {"metrics_user", cfg.daemon.metricsUser},
                          {"control_socket", cfg.daemon.controlSocket},
                          {"dry_run", cfg.daemon.dryRun},
                          {"log_level", cfg.daemon.logLevel},
                          {"progress_interval", formatDuration(cfg.daemon.progressIntervalNs)},
                          {"full_locate_interval", formatDuration(cfg.daemon.fullLocateIntervalNs)},
                          {"settled_interval", formatDuration(cfg.daemon.settledIntervalNs)}});
  if (!cfg.daemon.metricsBasicAuthFile.empty())
    root["daemon"].as_table()->insert("metrics_basic_auth_file", cfg.daemon.metricsBasicAuthFile);
  root["daemon"].as_table()->insert("metrics_allow_unauthenticated_remote",
                                    cfg.daemon.metricsAllowUnauthenticatedRemote);
  toml::table tiers;
  if (!cfg.tiers.fastNodes.empty()) {
    toml::array a;
    for (int n : cfg.tiers.fastNodes)
      a.push_back(n);
    tiers.insert("fast_nodes", a);
  }
  if (!cfg.tiers.slowNodes.empty()) {
    toml::array a;
    for (int n : cfg.tiers.slowNodes)
      a.push_back(n);
    tiers.insert("slow_nodes", a);
  }
  root.insert("tiers", tiers);
  toml::table sampling{{"source", sampleSourceName(cfg.sampling.source)},
                       {"cpu_budget_percent", cfg.sampling.cpuBudgetPercent},
                       {"sample_period", static_cast<int64_t>(cfg.sampling.samplePeriod)}};
  if (!cfg.sampling.trace.empty()) sampling.insert("trace", cfg.sampling.trace);
  sampling.insert("damon_max_processes", static_cast<int64_t>(cfg.sampling.damonMaxProcesses));
  sampling.insert("damon_stat", cfg.sampling.disableDamonStat ? "disable" : "keep");
  sampling.insert("max_sample_interval", formatDuration(cfg.sampling.maxSampleIntervalNs));
  sampling.insert("settled_cpu_budget_percent", cfg.sampling.settledCpuBudgetPercent);
  sampling.insert("settled_damon_window", formatDuration(cfg.sampling.settledDamonWindowNs));
  sampling.insert("settle_trickle_percent", cfg.sampling.settleTricklePercent);
  root.insert("sampling", sampling);
  root.insert(
      "migration",
      toml::table{{"page_granularity", pageGranularityName(cfg.migration.pageGranularity)},
                  {"max_promote_mib_per_s", static_cast<int64_t>(cfg.migration.maxPromoteMiBPerS)},
                  {"max_demote_mib_per_s", static_cast<int64_t>(cfg.migration.maxDemoteMiBPerS)},
                  {"call_latency_target", formatDuration(cfg.migration.callLatencyTargetNs)},
                  {"fast_headroom", amountText(cfg.migration.fastHeadroom)},
                  {"allow_kernel_tiering", cfg.migration.allowKernelTiering}});
  toml::array workloads;
  for (const WorkloadConfig& w : cfg.workloads) {
    toml::table t{{"name", w.name},
                  {"fast_quota", amountText(w.policy.fastQuota)},
                  {"hot_threshold", w.policy.hotThreshold},
                  {"hot_ratio", w.policy.hotRatio},
                  {"fill_headroom", amountText(w.policy.fillHeadroom)},
                  {"cold_threshold", w.policy.coldThreshold},
                  {"heat_half_life", formatDuration(w.policy.heatHalfLifeNs)},
                  {"cooldown", formatDuration(w.policy.cooldownNs)}};
    if (!w.profile.empty()) t.insert("profile", w.profile);
    if (w.selector.uid) t.insert("uid", static_cast<int64_t>(*w.selector.uid));
    switch (w.selector.kind) {
      case WorkloadSelector::Kind::Cgroup:
        t.insert("cgroup", w.selector.cgroup);
        break;
      case WorkloadSelector::Kind::Command:
        t.insert("command", w.selector.command);
        break;
      case WorkloadSelector::Kind::Pids: {
        toml::array a;
        for (pid_t p : w.selector.pids)
          a.push_back(static_cast<int64_t>(p));
        t.insert("pids", a);
        break;
      }
    }
    workloads.push_back(std::move(t));
  }
  if (!workloads.empty()) root.insert("workload", workloads);
  return root;
}

}  // namespace

std::string configToText(const CompiledConfig& cfg) {
  std::ostringstream out;
  out << "# compiled from " << cfg.sourcePath << "\n";
  for (const WorkloadConfig& w : cfg.workloads)
    if (!w.profilePath.empty())
      out << "# workload " << w.name << ": profile " << w.profile << " from " << w.profilePath
          << "\n";
  // Basic strings only ("...", escaped). toml++ 3.3 prints a string holding a newline between
  // triple quotes, and a newline right after the opening delimiter is dropped when parsed
  // (TOML 1.0): command = "\npr" came back as "pr" (found by scripts/fuzz-config). Without
  // multi-line strings it printed a '...' literal string with the raw newline, which does not
  // parse. Escaped basic strings round-trip exactly.
  constexpr toml::format_flags kFlags = toml::toml_formatter::default_flags &
                                        ~toml::format_flags::allow_multi_line_strings &
                                        ~toml::format_flags::allow_literal_strings;
  out << toml::toml_formatter{toTable(cfg), kFlags} << "\n";
  return out.str();
}

std::string configToJson(const CompiledConfig& cfg) {
  std::ostringstream out;
  toml::table t = toTable(cfg);
  t.insert("source", cfg.sourcePath);
  out << toml::json_formatter{t} << "\n";
  return out.str();
}

}  // namespace tierd::policy

#pragma once
/// \file
/// Shared by the sampling, record and hotness subcommands: starting the best available hotness
/// source with the reasons for skipping the others.

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/hotness/SamplingProbe.h"

namespace tierd::cli {

/// A started source and the event names it uses.
struct StartedSource {
  std::unique_ptr<telemetry::HotnessSource> source;
  std::vector<std::string> events;
};

/// Starts the first available source of `probe` (or only `only`, when not empty) for `target`,
/// logging each one skipped or failed to `log`. DAMON is skipped for a cgroup target. Errors
/// (Environment) when none starts. DAMON gets `damon`'s monitoring attributes.
Result<StartedSource> startBestSource(const telemetry::SamplingProbe& probe,
                                      const telemetry::SamplingTarget& target,
                                      const std::string& only, telemetry::PerfEventOpener& opener,
                                      telemetry::DamonFs& fs, const sys::SysRoot& root,
                                      std::ostream& log, const telemetry::DamonConfig& damon = {});

/// The JSON form of a probe (`tierctl sampling --probe --json`).
nlohmann::json samplingProbeToJson(const telemetry::SamplingProbe& p);

}  // namespace tierd::cli

#pragma once
/// \file
/// The daemon's main loop (`tierd`): compiles the config, builds the production seams
/// (MovePagesMigrator, hotness sources chosen by the sampling probe), and runs Engine ticks at
/// the configured interval until SIGTERM/SIGINT. SIGHUP compiles the config file again aside and
/// swaps it in at the next tick boundary; on any error the running config stays and the errors
/// are logged and counted; the new config's migrator limits reach the migrator then too
/// (migrationLimits). A signal thread turns SIGTERM into the stop flag the migrator checks
/// between move_pages calls and during its rate-budget and back-off waits, so a stop takes at
/// most one call's latency (or 10 ms of a wait). Run as root, tierd first drops to the
/// capabilities it needs (sys::daemonCapabilities).

#include <cstdint>
#include <optional>
#include <string>

#include "policy/Config.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/migrate/Migrator.h"

namespace tierd::daemon {

/// Command-line options of `tierd` that reach the loop.
struct DaemonOptions {
  std::string configPath = "/etc/tierd/tierd.toml";
  std::string sysRoot = "/";
  bool dryRun = false;            ///< --dry-run: overrides daemon.dry_run to true
  bool once = false;              ///< --once: one tick, then exit
  std::optional<uint64_t> ticks;  ///< --ticks N: exit after N ticks (tests, demos)
  /// Run as root, drop to sys::daemonCapabilities() at start (before any thread exists);
  /// false with the hidden --keep-capabilities (tests that need to keep theirs).
  bool dropCapabilities = true;
};

/// The migrator tuning of a compiled config: call latency target and per-direction byte rates
/// ([migration] call_latency_target, max_{promote,demote}_mib_per_s). Used by the daemon and by
/// `tierctl simulate`, so both move pages under the same limits.
migrate::MigratorConfig migratorConfig(const policy::CompiledConfig& c);

/// The part of migratorConfig() a reload changes (Engine::setConfig hands it to the migrator).
migrate::MigrationLimits migrationLimits(const policy::CompiledConfig& c);

/// The perf sampling tuning of a compiled config: [sampling] sample_period (the initial period
/// of PEBS/IBS) and cpu_budget_percent (per cent of one core, here as a fraction). The daemon
/// builds every perf source with the tuning of the config running at the time.
telemetry::PerfTuning perfTuning(const policy::CompiledConfig& c);

/// The metrics exporter's options of a compiled config: daemon.metrics_listen and
/// daemon.metrics_basic_auth_file (HTTP basic auth with the credentials in that file). The
/// daemon starts its exporter with them (when metrics_listen is not "").
telemetry::ExporterOptions exporterOptions(const policy::CompiledConfig& c);

/// The config compiler's check of `[sampling] trace` (CompileOptions::checkTrace): "" when
/// telemetry::checkTraceFile accepts the file, else the reason ("...: cannot read the trace (No
/// such file or directory)", "...:3: header lacks ..."). Used by the daemon and --check-config.
std::string checkReplayTrace(const std::string& path);

/// The hotness source the daemon builds for every scoped process: the configured one
/// (sampling.source), or with "auto" the first available in the probe's order: "perf-pebs" /
/// "perf-ibs" (PMU memory sampling, per-thread events), "damon-vaddr", "perf-sw-page-faults".
/// `why` gets the probe's reason. "" (and why = how to find out) when nothing is available.
std::string chooseSource(const policy::CompiledConfig& c, const telemetry::SamplingProbe& probe,
                         std::string& why);

/// Runs the daemon (first dropping capabilities, see DaemonOptions::dropCapabilities). Returns the
/// process exit code: 0 after a clean stop, 1 when the config or the environment prevents starting
/// (every reason printed to stderr).
int runDaemon(const DaemonOptions& options);

}  // namespace tierd::daemon

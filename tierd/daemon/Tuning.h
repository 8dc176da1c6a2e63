#pragma once
/// \file
/// What a compiled config sets in the seams the engine drives: the migrator's limits, the perf
/// sources' tuning, the metrics exporter's options, and the check of a replay trace. The daemon,
/// the engine (on reload) and `tierctl simulate` derive them here, so each runs under the same
/// settings; none of these reads anything but the config (or, for the trace, the named file).

#include <string>

#include "policy/Config.h"
#include "policy/ConfigCompiler.h"
#include "telemetry/hotness/DamonSource.h"
#include "telemetry/hotness/SamplingProbe.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/migrate/Migrator.h"

namespace tierd::daemon {

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

/// The DAMON monitoring attributes of one sampled process (DamonSource): 2 ms sampling adapted to
/// the access ratio between 500 us and 20 ms, 100 ms aggregation, 100..1000 regions, tried regions
/// read once per second; and [sampling] cpu_budget_percent (as a fraction) as the budget of the
/// process's kdamond plus tierd's draining, with this host's clock ticks per second
/// (sysconf(_SC_CLK_TCK)) for /proc/PID/stat. The daemon builds every DAMON source with the
/// config running at the time.
telemetry::DamonConfig damonTuning(const policy::CompiledConfig& c);

/// The metrics exporter's options of a compiled config: daemon.metrics_listen and
/// daemon.metrics_basic_auth_file (HTTP basic auth with the credentials in that file). The
/// daemon starts its exporter with them (when metrics_listen is not "").
telemetry::ExporterOptions exporterOptions(const policy::CompiledConfig& c);

/// What the daemon's start checks beyond the compiled config, and `tierd --check-config` with
/// it, so a config that passes the check does not fail the start: with the exporter on,
/// daemon.metrics_listen parses (telemetry::parseListenAddress) and
/// daemon.metrics_basic_auth_file, when set, is a private file holding "user:password"
/// (telemetry::readBasicAuthFile). One line per problem, naming the key; empty when both hold.
/// Whether the port is free is only known when the daemon binds it.
std::vector<std::string> exporterStartProblems(const policy::CompiledConfig& c);

/// The config compiler's check of `[sampling] trace` (CompileOptions::checkTrace): "" when
/// the file is a regular file that telemetry::parseTrace accepts, else the reason ("...: cannot
/// read the trace (No such file or directory)", "...: the trace is not a regular file",
/// "...:3: header lacks ..."). A FIFO or device is refused without blocking or reading. Used by
/// the daemon and --check-config.
std::string checkReplayTrace(const std::string& path);

/// The options of every compile of the daemon's config: at start, on reload (SIGHUP) and for
/// `tierd --check-config`, so that all three accept and refuse the same files. The owner and
/// mode rules of readConfigFileSafely for this process's effective uid (a file or directory
/// another user could change is refused), and the replay trace checked with checkReplayTrace.
/// Every compile of a file also refuses what is not a regular file and a file over
/// policy::kMaxConfigFileBytes (ConfigCompiler.h).
policy::CompileOptions daemonCompileOptions();

}  // namespace tierd::daemon

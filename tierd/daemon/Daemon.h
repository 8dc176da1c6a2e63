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
#include "tierd/daemon/Tuning.h"

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

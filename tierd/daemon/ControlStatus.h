#pragma once
/// \file
/// The document `tierctl status` shows (the "status" of the control socket's answer, Control.h):
/// what the running tierd saw and did at its last tick, per workload. JSON; its fields are
/// listed in docs/service.md ("Control socket"). Sizes in bytes, times in seconds.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tierd/daemon/Engine.h"

namespace tierd::daemon {

/// What the status document is made of; the daemon fills it after each tick.
struct StatusFacts {
  pid_t pid = 0;                       ///< tierd's pid
  std::string version;                 ///< TIERD_VERSION
  std::string configPath;              ///< the config file tierd runs with
  uint64_t tick = 0;                   ///< ticks done since start
  double lastTickUnix = 0;             ///< CLOCK_REALTIME seconds at the end of the last tick
  uint64_t intervalNs = 0;             ///< daemon.interval
  bool dryRun = false;                 ///< daemon.dry_run or --dry-run
  std::string source;                  ///< the hotness source of every scoped process ("" = none)
  std::string sourceWhy;               ///< why it was chosen (chooseSource)
  OperatorHold hold;                   ///< the operator's holds as the engine applies them
  const TickReport* report = nullptr;  ///< the last tick's report; null before a tick succeeded
  std::map<std::string, RestoreStatus> restores;  ///< Engine::restores()
  EngineTotals totals;                            ///< Engine::totals()
  std::vector<std::string> conditions;  ///< what keeps tierd from its job (ConditionLog::active)
  std::map<pid_t, std::string> pidWorkloads;  ///< each tracked pid's workload (Engine::workloadOf)
  /// The address the exporter listens on (ExporterProcess::address: daemon.metrics_listen with
  /// the bound port); "" = the exporter is off.
  std::string metricsListen;
  pid_t exporterPid = 0;         ///< the exporter process (ExporterProcess::pid); 0 = none
  int64_t exporterUid = -1;      ///< the uid it runs as; -1 = none
  bool exporterServing = false;  ///< ExporterProcess::running(): false once it ended
};

/// Why the arbiter left candidates this tick (policy::ArbiterStats), only the reasons that
/// occurred, as (name, count) in a fixed order: "budget", "no-room", "quota", "not-allowed",
/// "not-closer", "fill-no-room", "cooling-down", "held". The progress line's `left:` and the
/// status document's `not_moved` use the same names.
std::vector<std::pair<std::string, uint64_t>> notMovedReasons(const policy::ArbiterStats& a);

/// The status document of `f`: one JSON object (no newline).
std::string statusDocument(const StatusFacts& f);

/// `document` (statusDocument of the last tick) with the holds the operator asked since
/// (`wanted`, applied from the next tick): `paused` and each workload's `state` as they will be,
/// a `restore` no longer asked dropped. A document that does not parse is returned as it is.
std::string statusWithHold(const std::string& document, const OperatorHold& wanted);

/// The status document as `tierctl status` prints it for people: a header (version, pid,
/// config, tick, source, tiers, state), the last tick's plan and moves, one row per workload,
/// each process's source state, restores and conditions. `json`: a status document.
/// Errors: Input when `json` is not one.
Result<std::string> formatStatus(const std::string& json);

}  // namespace tierd::daemon

#pragma once
/// \file
/// tierctl subcommands. Each subcommand is a function taking the whole argv (as strings) and the
/// index of its first own argument; it prints to stdout/stderr and returns the process exit code
/// (0 ok, 1 failure, 2 usage error). The table in TierctlMain.cpp lists them; each lives in its
/// own <Name>Command.cpp.

#include <string>
#include <vector>

namespace tierd::cli {

/// Signature of a tierctl subcommand: `args` is argv, `begin` the index after the subcommand name.
using CommandFn = int (*)(const std::vector<std::string>& args, size_t begin);

/// `tierctl topology [--json] [--sys-root DIR]`: nodes, tiers, reasons, capacity, capabilities.
int topologyCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl metrics --catalog [--markdown|--json]`: the metric catalog (docs/metrics.md).
int metricsCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl bench heat [--json] [--gib N] [--samples N] [--runs N] [--zipf S]`: heat model
/// samples ingested per CPU second and bytes of model per tracked GiB (policy/HeatModel.h).
int benchHeatCommand(const std::vector<std::string>& args, size_t begin);
/// `tierctl sampling --probe [--json]`: hotness sources of this machine, their events, why (not).
int samplingCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl record --cgroup PATH|--pid PID --seconds N --out FILE`: record a sample trace.
int recordCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl hotness --source NAME|--trace FILE --truth FILE [--pid PID] [--seconds N] [--json]`:
/// precision/recall of the detected hot 2 MiB regions against ground truth.
int hotnessCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl locate --pid PID [--json] [--verbose]`: bytes per node and page size (docs/migrate.md).
int locateCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl move --pid PID --to NODE [--range A-B] [--json]`: one migration, per-errno results.
int moveCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl bench migrate|locate|heat ...`: the field's measurements side by side
/// (docs/migrate.md; heat: benchHeatCommand).
int benchCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl simulate --trace FILE --config FILE --topology DIR [--json] [--every D] [--tail D]`:
/// replays a trace through a config on a modelled machine (docs/simulate.md).
int simulateCommand(const std::vector<std::string>& args, size_t begin);

}  // namespace tierd::cli

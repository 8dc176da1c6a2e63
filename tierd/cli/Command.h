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

/// `tierctl bench <what> ...`: dispatches to the benchmark named by the first argument.
int benchCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl bench heat [--json] [--gib N] [--samples N] [--runs N] [--zipf S]`: heat model
/// samples ingested per CPU second and bytes of model per tracked GiB (policy/HeatModel.h).
int benchHeatCommand(const std::vector<std::string>& args, size_t begin);

}  // namespace tierd::cli

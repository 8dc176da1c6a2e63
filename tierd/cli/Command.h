#pragma once
/// \file
/// tierctl's commands. Each is a function taking the whole argv (as strings) and the index of its
/// first own argument; it prints to stdout/stderr and returns the process exit code (0 ok, 1
/// failure, 2 usage error). tierctlCommands() is the table `tierctl` dispatches on; each command
/// lives in its own <Name>Command.cpp and declares its options once in a CommandSpec, which
/// parseCommand() turns into parsed options, its --help, or a usage error.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/ConfigCompiler.h"
#include "tierd/cli/Args.h"
#include "tierd/core/Result.h"

namespace tierd::cli {

/// Signature of a tierctl subcommand: `args` is argv, `begin` the index after the subcommand name.
using CommandFn = int (*)(const std::vector<std::string>& args, size_t begin);

/// One row of a command table: the word on the command line, the function, one help line.
struct CommandEntry {
  std::string_view name;
  CommandFn fn;
  std::string_view help;
};

/// Every tierctl command, in the order `tierctl --help` lists them.
std::span<const CommandEntry> tierctlCommands();

/// Runs the command of `table` named by args[begin] with the arguments after it. `program` is
/// what precedes the name in messages ("tierctl", "tierctl bench"). No name, or --help/-h/help:
/// the table's usage (exit 2 on stderr, or 0 on stdout for help); an unknown name: exit 2.
int dispatchCommand(std::string_view program, std::span<const CommandEntry> table,
                    const std::vector<std::string>& args, size_t begin);

/// What a command declares once: its name in messages, its --help text and its options.
struct CommandSpec {
  std::string name;                 ///< "tierctl bench migrate": the prefix of every message
  std::string usage;                ///< --help prints this, a blank line, then the options
  std::vector<OptionSpec> options;  ///< parseCommand adds --help (last) to these
};

/// The hidden `--sys-root DIR` of the commands that read /proc and /sys (tests point it at a
/// fixture tree; the default is "/").
inline const OptionSpec kSysRootOption{"sys-root", true, "", "DIR"};

/// `--json` of the migration commands (locate, move, bench migrate|locate): the stable JSON of
/// docs/migrate.md.
inline const OptionSpec kMigrateJsonOption{"json", false,
                                           "print the stable JSON form (docs/migrate.md)"};

/// The command's --help text: its usage, a blank line, then every option's help line (--help
/// included).
std::string commandHelp(const CommandSpec& spec);

/// Parses args[begin..] for `spec`. nullopt means: return `exitCode` at once, because --help was
/// printed on stdout (0) or a usage error "NAME: message" on stderr (2: unknown, repeated or
/// valueless option, unexpected positional argument).
std::optional<ParsedArgs> parseCommand(const CommandSpec& spec,
                                       const std::vector<std::string>& args, size_t begin,
                                       int& exitCode);

/// Prints "NAME: " and e.describe() on stderr and returns `exitCode` (2 for a usage error, 1
/// when the environment or the work failed). An Internal error is a bug whatever the call site
/// expected: it is worded "NAME: internal error (a bug in tierd, please report it): ..." and
/// returns kExitInternal (70) instead (exitCodeFor, docs/service.md "Exit codes").
int fail(const CommandSpec& spec, const Error& e, int exitCode);

/// Compiles the config file `path` as the daemon does (its replay trace checked with
/// daemon::checkReplayTrace). On errors prints each on stderr as "file:line:column: key:
/// message", then "PROGRAM: PATH: N error(s)"; the outcome is returned either way.
policy::CompileOutcome compileConfigReporting(std::string_view program, const std::string& path);

/// compileConfigReporting with `options` as they are (`tierd --check-config` passes
/// daemon::daemonCompileOptions(), the daemon's own).
policy::CompileOutcome compileConfigReporting(std::string_view program, const std::string& path,
                                              const policy::CompileOptions& options);

/// Reads a whole input file named on the command line (a trace, a hot set). Errors: Environment
/// "cannot open" with the path and errno.
Result<std::string> readInputFile(const std::string& path);

/// `tierctl topology [--json] [--sys-root DIR]`: nodes, tiers, reasons, capacity, capabilities.
int topologyCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl metrics --catalog [--markdown|--json]`: the metric catalog (docs/metrics.md).
int metricsCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl bench heat [--json] [--gib N] [--samples N] [--runs N] [--zipf S]`: heat model
/// samples ingested per CPU second and bytes of model per tracked GiB (policy/HeatModel.h).
int benchHeatCommand(const std::vector<std::string>& args, size_t begin);
/// `tierctl bench tick [--size 1GiB] [--vmas N] [--ticks T] [--json]`: CPU and wall ms of the
/// daemon's tick (Engine, dry run) on a forked process with N VMAs of THP, for ticks where
/// nothing changed and ticks after a mapping change (daemon/TickBench.h; JSON: docs/migrate.md).
int benchTickCommand(const std::vector<std::string>& args, size_t begin);
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

/// `tierctl bench migrate|locate|heat|tick ...`: the field's measurements side by side
/// (docs/migrate.md; heat: benchHeatCommand; tick: benchTickCommand).
int benchCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl simulate --trace FILE --config FILE --topology DIR [--json] [--every D] [--tail D]`:
/// replays a trace through a config on a modelled machine (docs/simulate.md).
int simulateCommand(const std::vector<std::string>& args, size_t begin);

/// `tierctl status [--json] [--socket PATH]`: what the running tierd sees and does per workload
/// (tierd/daemon/ControlStatus.h), asked through its control socket (daemon.control_socket).
int statusCommand(const std::vector<std::string>& args, size_t begin);
/// `tierctl pause [--workload NAME] [--socket PATH]`: the running tierd moves no pages (of one
/// workload) until resumed.
int pauseCommand(const std::vector<std::string>& args, size_t begin);
/// `tierctl resume [--workload NAME] [--socket PATH]`: undo pause and restore (of one workload).
int resumeCommand(const std::vector<std::string>& args, size_t begin);
/// `tierctl restore --workload NAME [--wait SECONDS] [--socket PATH]`: the running tierd moves the
/// workload's pages back to where its memory policy puts them and holds it (the rollback).
int restoreCommand(const std::vector<std::string>& args, size_t begin);

}  // namespace tierd::cli

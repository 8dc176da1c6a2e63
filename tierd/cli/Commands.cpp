// The tierctl command table, dispatch, and the per-command option parsing (Command.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include "tierd/cli/Command.h"
#include "tierd/daemon/Tuning.h"

namespace tierd::cli {
namespace {

// One row per subcommand; each lives in tierd/cli/<Name>Command.cpp.
const CommandEntry kTierctlCommands[] = {
    {"status", &statusCommand, "what the running tierd sees and does, per workload"},
    {"pause", &pauseCommand, "the running tierd moves no pages (of one workload) until resumed"},
    {"resume", &resumeCommand, "undo pause and restore: tier again (one workload or all)"},
    {"restore", &restoreCommand,
     "move a workload's pages back to where its memory policy puts them, and hold it"},
    {"topology", &topologyCommand,
     "nodes, tiers (fast/slow) and why, capacity, distances, kernel capabilities"},
    {"sampling", &samplingCommand,
     "hotness sources available here (PEBS/IBS, DAMON, page faults), events, why (not)"},
    {"record", &recordCommand, "record a sample trace of a cgroup or pid"},
    {"hotness", &hotnessCommand,
     "precision/recall of detected hot 2 MiB regions against a known hot set"},
    {"locate", &locateCommand, "where a process's memory lives, per node and page size"},
    {"move", &moveCommand, "move a process's pages to a node, with per-errno results"},
    {"metrics", &metricsCommand, "the Prometheus metric catalog (--catalog [--markdown|--json])"},
    {"simulate", &simulateCommand,
     "replay a recorded trace through a config on a modelled machine, tick by tick"},
    {"bench", &benchCommand, "bench migrate|locate|heat: GiB/s, query speed vs naive, heat model"},
};

void usage(std::ostream& out, std::string_view program, std::span<const CommandEntry> table) {
  out << "usage: " << program << " <command> [options]\n\ncommands:\n";
  for (const auto& c : table)
    out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ') << c.help
        << "\n";
  out << "\n'" << program << " <command> --help' for the options of one command.\n";
}

std::vector<OptionSpec> withHelp(const CommandSpec& spec) {
  std::vector<OptionSpec> all = spec.options;
  all.push_back({"help", false, "show this help"});
  return all;
}

}  // namespace

std::string commandHelp(const CommandSpec& spec) {
  return spec.usage + "\n" + optionHelp(withHelp(spec));
}

std::span<const CommandEntry> tierctlCommands() {
  return kTierctlCommands;
}

int dispatchCommand(std::string_view program, std::span<const CommandEntry> table,
                    const std::vector<std::string>& args, size_t begin) {
  if (begin >= args.size() || args[begin] == "--help" || args[begin] == "-h" ||
      args[begin] == "help") {
    const bool none = begin >= args.size();
    usage(none ? std::cerr : std::cout, program, table);
    return none ? 2 : 0;
  }
  for (const auto& c : table)
    if (args[begin] == c.name) return c.fn(args, begin + 1);
  std::cerr << program << ": unknown command '" << args[begin] << "'\n";
  usage(std::cerr, program, table);
  return 2;
}

std::optional<ParsedArgs> parseCommand(const CommandSpec& spec,
                                       const std::vector<std::string>& args, size_t begin,
                                       int& exitCode) {
  auto parsed = parseArgs(args, begin, withHelp(spec));
  if (!parsed) {
    exitCode = fail(spec, parsed.error(), 2);
    return std::nullopt;
  }
  if (parsed->has("help")) {
    std::cout << commandHelp(spec);
    exitCode = 0;
    return std::nullopt;
  }
  if (!parsed->positional.empty()) {  // no command takes positional arguments
    std::cerr << spec.name << ": unexpected argument '" << parsed->positional[0] << "'\n";
    exitCode = 2;
    return std::nullopt;
  }
  return std::move(parsed.value());
}

policy::CompileOutcome compileConfigReporting(std::string_view program, const std::string& path) {
  policy::CompileOptions options;
  options.checkTrace = daemon::checkReplayTrace;
  return compileConfigReporting(program, path, options);
}

policy::CompileOutcome compileConfigReporting(std::string_view program, const std::string& path,
                                              const policy::CompileOptions& options) {
  policy::CompileOutcome out = policy::compileConfigFile(path, options);
  if (!out.ok()) {
    for (const policy::ConfigError& e : out.errors)
      std::cerr << e.describe() << "\n";
    std::cerr << program << ": " << path << ": " << out.errors.size() << " error"
              << (out.errors.size() == 1 ? "" : "s") << "\n";
  }
  return out;
}

Result<std::string> readInputFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::fromErrno("cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int fail(const CommandSpec& spec, const Error& e, int exitCode) {
  std::cerr << spec.name << ": "
            << (e.kind == ErrorKind::Internal
                    ? "internal error (a bug in tierd, please report it): "
                    : "")
            << e.describe() << "\n";
  return exitCodeFor(e, exitCode);
}

}  // namespace tierd::cli

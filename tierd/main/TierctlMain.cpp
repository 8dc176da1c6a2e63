// tierctl: the operator's command-line tool (DESIGN.md "Command line").
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tierd/cli/Command.h"
#include "tierd/main/MainGuard.h"

namespace {

struct Subcommand {
  const char* name;
  tierd::cli::CommandFn fn;
  const char* help;
};

// One row per subcommand; each lives in tierd/cli/<Name>Command.cpp.
const Subcommand kSubcommands[] = {
    {"topology", &tierd::cli::topologyCommand,
     "nodes, tiers (fast/slow) and why, capacity, distances, kernel capabilities"},
    {"sampling", &tierd::cli::samplingCommand,
     "hotness sources available here (PEBS/IBS, DAMON, page faults), events, why (not)"},
    {"record", &tierd::cli::recordCommand, "record a sample trace of a cgroup or pid"},
    {"hotness", &tierd::cli::hotnessCommand,
     "precision/recall of detected hot 2 MiB regions against a known hot set"},
    {"locate", &tierd::cli::locateCommand,
     "where a process's memory lives, per node and page size"},
    {"move", &tierd::cli::moveCommand, "move a process's pages to a node, with per-errno results"},
    {"metrics", &tierd::cli::metricsCommand,
     "the Prometheus metric catalog (--catalog [--markdown|--json])"},
    {"simulate", &tierd::cli::simulateCommand,
     "replay a recorded trace through a config on a modelled machine, tick by tick"},
    {"bench", &tierd::cli::benchCommand,
     "bench migrate|locate|heat: GiB/s, query speed vs naive, heat model"},
};

void usage(std::ostream& out) {
  out << "usage: tierctl <command> [options]\n\ncommands:\n";
  for (const auto& s : kSubcommands) {
    std::string name = s.name;
    out << "  " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') << s.help
        << "\n";
  }
  out << "\n'tierctl <command> --help' for the options of one command.\n";
}

int tierctlMain(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() < 2 || args[1] == "--help" || args[1] == "-h" || args[1] == "help") {
    usage(args.size() < 2 ? std::cerr : std::cout);
    return args.size() < 2 ? 2 : 0;
  }
  for (const auto& s : kSubcommands)
    if (args[1] == s.name) return s.fn(args, 2);
  std::cerr << "tierctl: unknown command '" << args[1] << "'\n";
  usage(std::cerr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return tierd::service::runGuarded(
      "tierctl", [&] { return tierctlMain(argc, argv); }, std::cerr);
}

// tierd: the memory-tiering daemon (DESIGN.md "Command line").
#include <iostream>
#include <string>
#include <vector>

#include "tierd/cli/Args.h"
#include "tierd/topology/TopologyJson.h"

int main(int argc, char** argv) {
  using namespace tierd;
  std::vector<std::string> args(argv, argv + argc);
  const std::vector<cli::OptionSpec> specs = {
      {"config", true, "TOML policy file (default /etc/tierd/tierd.toml)", "FILE"},
      {"dry-run", false, "decide and report, move nothing"},
      {"once", false, "run one tick and exit"},
      {"check-config", false, "compile the config, print errors or the result, and exit"},
      {"sys-root", true, "", "DIR"},
      {"help", false, "show this help"},
  };
  auto parsed = cli::parseArgs(args, 1, specs);
  if (!parsed) {
    std::cerr << "tierd: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->has("help")) {
    std::cout << "usage: tierd [options]\n\n" << cli::optionHelp(specs);
    return 0;
  }
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  auto topo = topology::readTopology(root);
  if (!topo) {
    std::cerr << "tierd: cannot read the memory topology: " << topo.error().describe() << "\n";
    return 1;
  }
  std::cerr << "tierd: topology classified by " << topo->method << ": fast nodes "
            << topology::topologyToJson(topo.value())["fast_nodes"].dump() << ", slow nodes "
            << topology::topologyToJson(topo.value())["slow_nodes"].dump() << "\n";
  if (!parsed->has("once")) {
    std::cerr << "tierd: the tiering loop is not built yet; run with --once\n";
    return 1;
  }
  return 0;
}

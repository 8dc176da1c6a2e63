#include <iostream>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/topology/TopologyJson.h"

namespace tierd::cli {

int topologyCommand(const std::vector<std::string>& args, size_t begin) {
  const std::vector<OptionSpec> specs = {
      {"json", false, "print the stable JSON form (docs/topology.md)"},
      {"sys-root", true, "", "DIR"},
      {"help", false, "show this help"},
  };
  auto parsed = parseArgs(args, begin, specs);
  if (!parsed) {
    std::cerr << "tierctl topology: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->has("help")) {
    std::cout << "usage: tierctl topology [--json]\n\nNodes, their tier (fast/slow) and why, "
                 "capacity, distances and kernel capabilities.\n\n"
              << optionHelp(specs);
    return 0;
  }
  if (!parsed->positional.empty()) {
    std::cerr << "tierctl topology: unexpected argument '" << parsed->positional[0] << "'\n";
    return 2;
  }
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  auto topo = topology::readTopology(root);
  if (!topo) {
    std::cerr << "tierctl topology: " << topo.error().describe() << "\n";
    return 1;
  }
  if (parsed->has("json"))
    std::cout << topology::topologyToJson(topo.value()).dump(2) << "\n";
  else
    std::cout << topology::topologyToText(topo.value());
  return 0;
}

}  // namespace tierd::cli

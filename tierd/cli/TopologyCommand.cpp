#include <iostream>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/topology/TopologyJson.h"

namespace tierd::cli {

int topologyCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {"tierctl topology",
                            "usage: tierctl topology [--json]\n\nNodes, their tier (fast/slow) "
                            "and why, capacity, distances and kernel capabilities.\n",
                            {
                                {"json", false, "print the stable JSON form (docs/topology.md)"},
                                kSysRootOption,
                            }};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  auto topo = topology::readTopology(root);
  if (!topo) return fail(spec, topo.error(), 1);
  if (parsed->has("json"))
    std::cout << topology::topologyToJson(topo.value()).dump(2) << "\n";
  else
    std::cout << topology::topologyToText(topo.value());
  return 0;
}

}  // namespace tierd::cli

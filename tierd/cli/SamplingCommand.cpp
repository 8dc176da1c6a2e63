// tierctl sampling --probe: which hotness source this machine can use and why.
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "telemetry/hotness/SamplingProbe.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/Sampling.h"

namespace tierd::cli {

nlohmann::json samplingProbeToJson(const telemetry::SamplingProbe& p) {
  nlohmann::json j;
  j["cpu"] = {{"vendor", p.cpu.vendor}, {"family", p.cpu.family}, {"model", p.cpu.model}};
  j["event_sources"] = p.pmus;
  j["hardware_pmu"] = p.hardwarePmu;
  j["perf_event_paranoid"] = p.perfEventParanoid;
  j["privileged"] = p.privileged;
  nlohmann::json kds = nlohmann::json::array();
  for (const auto& k : p.damon.kdamonds)
    kds.push_back({{"id", k.id},
                   {"state", k.state},
                   {"pid", k.pid},
                   {"operations", k.operations},
                   {"avail_operations", k.availOperations},
                   {"ours", false}});
  j["damon"] = {{"present", p.damon.present},
                {"nr_kdamonds", p.damon.nrKdamonds},
                {"kdamonds", kds},
                {"usable", p.damon.usable},
                {"vaddr", p.damon.vaddr},
                {"vaddr_evidence", p.damon.vaddrEvidence},
                {"why", p.damon.why}};
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : p.sources)
    sources.push_back(
        {{"name", s.name}, {"available", s.available}, {"events", s.events}, {"why", s.why}});
  j["sources"] = sources;
  j["chosen"] = p.chosen.empty() ? nlohmann::json() : nlohmann::json(p.chosen);
  // The preferred source is the first; anything else chosen is a fallback.
  const bool fallback = !p.chosen.empty() && !p.sources.empty() && p.chosen != p.sources[0].name;
  j["fallback"] = fallback ? nlohmann::json(p.chosen) : nlohmann::json();
  return j;
}

int samplingCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl sampling",
      "usage: tierctl sampling --probe [--json]\n\nWhich hotness source tierd would use here "
      "(PEBS/IBS, DAMON, software page faults), the events and why, or why not.\n",
      {
          {"probe", false, "list the hotness sources of this machine, their events and why (not)"},
          {"json", false, "print JSON (keys: hardware_pmu, damon, sources[], chosen)"},
          kSysRootOption,
      }};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  if (!parsed->has("probe")) {
    std::cerr << commandHelp(spec);
    return 2;
  }
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  telemetry::SysRootDamonFs fs(root);
  auto p = telemetry::probeSampling(root, fs, ::geteuid() == 0);
  if (parsed->has("json")) {
    std::cout << samplingProbeToJson(p).dump(2) << "\n";
  } else {
    std::cout << "cpu: " << p.cpu.vendor << " family " << p.cpu.family << " model " << p.cpu.model
              << "\nhardware PMU: " << (p.hardwarePmu ? "yes" : "no") << "\n\n";
    for (const auto& s : p.sources) {
      std::cout << (s.available ? "  available  " : "  no         ") << s.name << "\n";
      for (const auto& e : s.events)
        std::cout << "               event: " << e << "\n";
      std::cout << "               " << s.why << "\n";
    }
    std::cout << "\nchosen: " << (p.chosen.empty() ? "none" : p.chosen)
              << (!p.chosen.empty() && p.chosen != p.sources[0].name ? " (fallback)" : "") << "\n";
  }
  return p.chosen.empty() ? 1 : 0;
}

}  // namespace tierd::cli

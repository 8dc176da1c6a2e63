// tierctl simulate: replay a recorded trace through a config on a modelled machine (the tick
// engine with a ModelKernelMigrator; tierd/simulate/Simulator.h) and print what the policy would do
// over time. docs/simulate.md describes the model, the columns and the JSON.
#include <fstream>
#include <iostream>
#include <sstream>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigUnits.h"
#include "telemetry/hotness/Trace.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/daemon/Tuning.h"
#include "tierd/simulate/Simulator.h"
#include "tierd/sys/Parsers.h"

namespace tierd::cli {

int simulateCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl simulate",
      "usage: tierctl simulate [--trace FILE] --config FILE --topology DIR [--json]\n"
      "                        [--every DURATION] [--tail DURATION] [--workload NAME]\n"
      "                        [--reuse-pid PID@TIME[,PID@TIME...]]\n"
      "\nReplays the trace through the config's policy, tick by tick, on the modelled\n"
      "machine (sampled 2 MiB regions start on the slow tier; docs/simulate.md) and\n"
      "prints per tick: samples served by the fast tier, bytes promoted/demoted,\n"
      "ping-pong moves, modelled bytes on the fast tier; then a summary.\n",
      {
          {"trace", true,
           "recorded sample trace (tierctl record; docs/trace-format.md); default: the config's "
           "[sampling] trace when its source is \"replay\"",
           "FILE"},
          {"config", true, "tierd config to try (profiles are looked up next to it)", "FILE"},
          {"topology", true, "topology tree to model, e.g. tests/fixtures/topology/qemu-2node",
           "DIR"},
          {"json", false, "print JSON (docs/simulate.md), one entry per tick"},
          {"every", true, "one text row per this much simulated time (default: one per tick)",
           "DURATION"},
          {"tail", true, "keep ticking this long after the last sample (default 0s)", "DURATION"},
          {"workload", true, "workload of pids no `pids` selector names (default: the first)",
           "NAME"},
          {"pingpong-window", true,
           "a region moved up-down-up (or down-up-down) within this is ping-pong (default 60s)",
           "DURATION"},
          {"reuse-pid", true,
           "model pid reuse: at simulated TIME (after the scope scan of that tick, before its "
           "moves) "
           "the traced process PID exits and a new process gets its pid; comma-separated list",
           "PID@TIME"},
      },
  };
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  if (!parsed->has("config") || !parsed->has("topology")) {
    std::cerr << "tierctl simulate: need --config FILE --topology DIR and a trace (see --help)\n";
    return 2;
  }
  auto every = parsed->durationNs("every", 0);
  if (!every) return fail(spec, every.error(), 2);
  auto tail = parsed->durationNs("tail", 0);
  if (!tail) return fail(spec, tail.error(), 2);
  auto window = parsed->durationNs("pingpong-window", policy::kPingPongWindowNs);
  if (!window) return fail(spec, window.error(), 2);

  const std::string configPath = *parsed->get("config");
  policy::CompileOutcome compiled = compileConfigReporting(spec.name, configPath);
  if (!compiled.ok()) return 1;
  // The trace: --trace, else the config's own (source = "replay").
  std::string tracePath = parsed->get("trace").value_or(compiled.config->sampling.trace);
  if (tracePath.empty()) {
    std::cerr << "tierctl simulate: need --trace FILE, or a config with [sampling] source = "
                 "\"replay\" and trace = FILE\n";
    return 2;
  }
  daemon::SimulationOptions options;
  options.topologyDir = *parsed->get("topology");
  options.defaultWorkload = parsed->get("workload").value_or("");
  options.tailNs = tail.value();
  options.pingPongWindowNs = window.value();
  if (auto list = parsed->get("reuse-pid")) {
    std::string item;
    std::istringstream in(*list);
    while (std::getline(in, item, ',')) {
      const size_t at = item.find('@');
      auto pid = at == std::string::npos ? Result<pid_t>(Error::input("no '@'", item))
                                         : parsePid(item.substr(0, at), "--reuse-pid");
      auto when =
          at == std::string::npos
              ? Result<uint64_t>(Error::input("no '@'", item))
              : parseDurationOption(item.substr(at + 1), policy::kMaxDurationNs, "--reuse-pid");
      if (!pid || !when) {
        std::cerr << "tierctl simulate: --reuse-pid: '" << item
                  << "' is not PID@TIME (e.g. 31337@10s)\n";
        return 2;
      }
      options.pidReuses.push_back({pid.value(), when.value()});
    }
  }
  options.traceLabel = tracePath;
  options.configLabel = configPath;
  options.topologyLabel = options.topologyDir;

  auto text = readInputFile(tracePath);
  if (!text) {
    return fail(spec, text.error(), 1);
  }
  auto trace = telemetry::parseTrace(text.value(), tracePath);
  if (!trace) {
    return fail(spec, trace.error(), 1);
  }
  auto result = daemon::simulate(trace.value(), *compiled.config, options);
  if (!result) {
    return fail(spec, result.error(), 1);
  }
  if (parsed->has("json")) {
    std::cout << daemon::simulationJson(result.value()).dump(2) << "\n";
  } else {
    const uint64_t interval = result->intervalNs;
    const uint64_t rowTicks = every.value() ? (every.value() + interval - 1) / interval : 1;
    std::cout << daemon::formatSimulationText(result.value(), rowTicks);
  }
  return 0;
}

}  // namespace tierd::cli

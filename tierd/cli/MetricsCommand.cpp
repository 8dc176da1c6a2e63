#include <iostream>

#include "telemetry/metrics/Catalog.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"

namespace tierd::cli {

int metricsCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {
      "tierctl metrics",
      "usage: tierctl metrics --catalog [--markdown|--json]\n\nThe Prometheus metrics tierd "
      "exports (docs/metrics.md).\n",
      {
          {"catalog", false, "print the metric catalog (names, types, units, labels, help)"},
          {"markdown", false, "as Markdown (docs/metrics.md is this output)"},
          {"json", false, "as JSON"},
      }};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  if (!parsed->has("catalog")) {
    std::cerr << "tierctl metrics: say what to show: --catalog\n";
    return 2;
  }
  if (parsed->has("markdown") && parsed->has("json")) {
    std::cerr << "tierctl metrics: --markdown and --json exclude each other\n";
    return 2;
  }
  if (parsed->has("json")) {
    std::cout << telemetry::catalogJson();
  } else if (parsed->has("markdown")) {
    std::cout << telemetry::catalogMarkdown();
  } else {
    for (const auto& m : telemetry::catalog()) {
      std::string labels;
      for (const auto& l : m.labels)
        labels += (labels.empty() ? "" : ",") + l.name;
      std::cout << m.name << " " << telemetry::metricTypeName(m.type) << " {" << labels << "}\n";
    }
  }
  return 0;
}

}  // namespace tierd::cli

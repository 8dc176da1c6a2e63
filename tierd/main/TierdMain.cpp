// tierd: the memory-tiering daemon (docs/service.md).
#include <iostream>
#include <string>
#include <vector>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigFormat.h"
#include "policy/ConfigSchema.h"
#include "telemetry/metrics/ExporterProcess.h"
#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ManPages.h"
#include "tierd/daemon/Daemon.h"
#include "tierd/daemon/Tuning.h"
#include "tierd/main/MainGuard.h"
#include "tierd/main/Version.h"

namespace {

int tierdMain(int argc, char** argv) {
  using namespace tierd;
  std::vector<std::string> args(argv, argv + argc);
  const std::vector<cli::OptionSpec> specs = {
      {"config", true, "TOML policy file (default /etc/tierd/tierd.toml)", "FILE"},
      {"dry-run", false, "decide and report, move nothing"},
      {"once", false, "run one tick and exit"},
      {"ticks", true, "run N ticks and exit", "N"},
      {"check-config", false, "compile the config, print errors or the result, and exit"},
      {"json", false, "with --check-config: print the compiled result as JSON"},
      {"print-config-schema", false, "print docs/configuration.md (every key) and exit"},
      {"print-man-page", true, "print a manual page (tierd.8, tierctl.8, tierd.toml.5) and exit",
       "PAGE"},
      {"sys-root", true, "", "DIR"},
      {"keep-capabilities", false, ""},  // hidden: tests; see DaemonOptions::dropCapabilities
      {"metrics-exporter", false, ""},   // hidden: the exporter process tierd starts itself
      {"version", false, "print the version (tierd X.Y.Z) and exit"},
      {"help", false, "show this help"},
  };
  auto parsed = cli::parseArgs(args, 1, specs);
  if (!parsed) {
    std::cerr << "tierd: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->has("metrics-exporter")) return telemetry::runMetricsExporter();
  if (parsed->has("help")) {
    std::cout << "usage: tierd [options]\n\n" << cli::optionHelp(specs);
    return 0;
  }
  if (parsed->has("version")) {
    std::cout << service::versionLine();
    return 0;
  }
  if (parsed->has("print-config-schema")) {
    std::cout << policy::renderSchemaMarkdown();
    return 0;
  }
  if (auto page = parsed->get("print-man-page")) {
    auto text = cli::renderManPage(*page, specs);
    if (!text) {
      std::cerr << "tierd: " << text.error().describe() << "\n";
      return 2;
    }
    std::cout << text.value();
    return 0;
  }
  const std::string configPath = parsed->get("config").value_or("/etc/tierd/tierd.toml");
  if (parsed->has("check-config")) {
    // The daemon's own options: what --check-config accepts, the daemon starts and reloads with.
    policy::CompileOutcome out =
        cli::compileConfigReporting("tierd", configPath, daemon::daemonCompileOptions());
    if (!out.ok()) return 1;
    const std::vector<std::string> problems = daemon::exporterStartProblems(*out.config);
    for (const std::string& p : problems)
      std::cerr << configPath << ": " << p << "\n";
    if (!problems.empty()) return 1;
    std::cout << (parsed->has("json") ? policy::configToJson(*out.config)
                                      : policy::configToText(*out.config));
    return 0;
  }
  daemon::DaemonOptions options;
  options.configPath = configPath;
  options.sysRoot = parsed->get("sys-root").value_or("/");
  options.dryRun = parsed->has("dry-run");
  options.once = parsed->has("once");
  options.dropCapabilities = !parsed->has("keep-capabilities");
  if (parsed->has("ticks")) {
    auto v = parsed->integer("ticks", 0, 1, UINT64_MAX);
    if (!v) {
      std::cerr << "tierd: " << v.error().describe() << "\n";
      return 2;
    }
    options.ticks = v.value();
  }
  return daemon::runDaemon(options);
}

}  // namespace

int main(int argc, char** argv) {
  return tierd::service::runGuarded(
      "tierd", [&] { return tierdMain(argc, argv); }, std::cerr);
}

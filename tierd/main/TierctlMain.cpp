// tierctl: the operator's command-line tool (README.md). The commands and their
// table live in tierd/cli (Command.h).
#include <iostream>
#include <string>
#include <vector>

#include "tierd/cli/Command.h"
#include "tierd/main/MainGuard.h"
#include "tierd/main/Version.h"

int main(int argc, char** argv) {
  return tierd::service::runGuarded(
      "tierctl",
      [&] {
        const std::vector<std::string> args(argv, argv + argc);
        if (args.size() >= 2 && args[1] == "--version") {
          if (args.size() > 2) {
            std::cerr << "tierctl: --version takes no arguments\n";
            return 2;
          }
          std::cout << tierd::service::versionLine();
          return 0;
        }
        return tierd::cli::dispatchCommand("tierctl", tierd::cli::tierctlCommands(), args, 1);
      },
      std::cerr);
}

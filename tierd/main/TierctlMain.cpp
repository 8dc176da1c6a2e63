// tierctl: the operator's command-line tool (README.md). The commands and their
// table live in tierd/cli (Command.h).
#include <iostream>
#include <string>
#include <vector>

#include "tierd/cli/Command.h"
#include "tierd/main/MainGuard.h"

int main(int argc, char** argv) {
  return tierd::service::runGuarded(
      "tierctl",
      [&] {
        const std::vector<std::string> args(argv, argv + argc);
        return tierd::cli::dispatchCommand("tierctl", tierd::cli::tierctlCommands(), args, 1);
      },
      std::cerr);
}

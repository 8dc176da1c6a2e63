#pragma once
/// \file
/// Runs the built binaries as an operator would, for the integration tests: run() appends `args`
/// to "<build>/bin/tierctl" and captures stdout and stderr together; runShell() runs any command.

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace tierd::itest {

/// Exit code (-1 when killed by a signal) and combined output of one tierctl run.
struct Run {
  int exitCode;
  std::string out;
};

/// Runs the shell command `cmd` and waits for it: its exit code (-1 when killed by a signal) and
/// its stdout (stderr only where `cmd` redirects it).
inline Run runShell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// Runs `tierctl ARGS 2>&1` through the shell and waits for it.
inline Run run(const std::string& args) {
  return runShell(std::string(TIERD_BIN_DIR) + "/tierctl " + args + " 2>&1");
}

}  // namespace tierd::itest

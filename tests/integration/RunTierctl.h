#pragma once
/// \file
/// Runs the built tierctl binary as an operator would, for the integration tests: `args` are
/// appended to "<build>/bin/tierctl", stdout and stderr are captured together.

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

/// Runs `tierctl ARGS 2>&1` through the shell and waits for it.
inline Run run(const std::string& args) {
  std::string cmd = std::string(TIERD_BIN_DIR) + "/tierctl " + args + " 2>&1";
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

}  // namespace tierd::itest

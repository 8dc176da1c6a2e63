// The doctest main shared by all unit and integration test executables. It exits with
// tierd::testing::kSkipExitCode (77) when a test case skipped itself (TIERD_SKIP) and no check
// failed, so ctest (SKIP_RETURN_CODE 77) shows it as skipped instead of passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "tests/unit/support/Skip.h"

namespace tierd::testing {
namespace {
int skipped = 0;
}  // namespace

void markSkipped(const std::string& reason) {
  ++skipped;
  std::cout << "SKIPPED: " << reason << std::endl;
}

int skippedCount() {
  return skipped;
}

}  // namespace tierd::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  return tierd::testing::skippedCount() > 0 ? tierd::testing::kSkipExitCode : 0;
}

// The doctest main shared by all unit and integration test executables. It exits with
// tierd::testing::kSkipExitCode (77) when a test case skipped itself (TIERD_SKIP) and no check
// failed, so ctest (SKIP_RETURN_CODE 77) shows it as skipped instead of passed. It fails when a
// --test-case filter (how ctest runs each test case, tests/CMakeLists.txt) matched no test case:
// a name CMake's test discovery cannot pass through (a ';' splits it into two lists items, each
// run as its own filter) would otherwise pass without running anything.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>
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

namespace {
// Counts the test cases that started (a doctest listener: it reports nothing).
int started = 0;
struct StartCounter final : doctest::IReporter {
  explicit StartCounter(const doctest::ContextOptions& /*unused*/) {}
  void report_query(const doctest::QueryData& /*unused*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& /*unused*/) override {}
  void test_case_start(const doctest::TestCaseData& /*unused*/) override { ++started; }
  void test_case_reenter(const doctest::TestCaseData& /*unused*/) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& /*unused*/) override {}
  void test_case_exception(const doctest::TestCaseException& /*unused*/) override {}
  void subcase_start(const doctest::SubcaseSignature& /*unused*/) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& /*unused*/) override {}
  void log_message(const doctest::MessageData& /*unused*/) override {}
  void test_case_skipped(const doctest::TestCaseData& /*unused*/) override {}
};
REGISTER_LISTENER("tierd-start-counter", 1, StartCounter);
}  // namespace

}  // namespace tierd::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  for (int i = 1; i < argc; ++i) {
    if (tierd::testing::started == 0 &&
        (std::strncmp(argv[i], "--test-case=", 12) == 0 || std::strncmp(argv[i], "-tc=", 4) == 0)) {
      std::cerr << "no test case matched " << argv[i]
                << " (a name with ';' cannot pass through ctest's discovery)" << std::endl;
      return 1;
    }
  }
  return tierd::testing::skippedCount() > 0 ? tierd::testing::kSkipExitCode : 0;
}

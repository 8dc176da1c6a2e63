#pragma once
/// \file
/// Skipping a test case at run time so that ctest reports it as skipped, never as passed.
/// doctest has no run-time skip, so a test case that cannot run here (no root, no perf_event_open,
/// no hugetlb pool) calls TIERD_SKIP("why"): the reason is printed as "SKIPPED: why" and the test
/// main (tests/unit/TestMain.cpp) exits with kSkipExitCode when no check failed. ctest runs each
/// test case in its own process (doctest_discover_tests) with SKIP_RETURN_CODE 77, as numactl's
/// tests do, and prints "Skipped" with the reason in the output. A failed check still fails.

#include <string>

namespace tierd::testing {

/// The exit code of a test process whose test cases were skipped: 77 (automake, numactl).
inline constexpr int kSkipExitCode = 77;

/// Records that the running test case is skipped because of `reason` and prints it. Call from
/// the test case's thread, then return from the test case (TIERD_SKIP does both).
void markSkipped(const std::string& reason);

/// How many test cases of this process called markSkipped.
int skippedCount();

}  // namespace tierd::testing

/// Skips the current test case: prints `reason` and returns from the test case function.
#define TIERD_SKIP(reason)                 \
  do {                                     \
    ::tierd::testing::markSkipped(reason); \
    return;                                \
  } while (0)

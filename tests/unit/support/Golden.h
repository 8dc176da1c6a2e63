#pragma once
/// \file
/// The golden-file switch shared by the tests that compare output with files under
/// tests/fixtures: `TIERD_UPDATE_GOLDEN=1` rewrites the golden files with what the code produces
/// now (review the diff before committing it); unset or any other value ("0", "", "yes", "true")
/// only compares. One spelling only, so that `TIERD_UPDATE_GOLDEN=0` can never silently accept
/// a regression.

#include <cstdlib>
#include <string_view>

namespace tierd::testing {

/// Whether the value of TIERD_UPDATE_GOLDEN (`value`, nullptr when unset) asks to rewrite the
/// golden files: true for exactly "1", false for anything else.
inline bool goldenUpdateRequested(const char* value) {
  return value != nullptr && std::string_view(value) == "1";
}

/// goldenUpdateRequested() of this process's TIERD_UPDATE_GOLDEN.
inline bool goldenUpdateRequested() {
  return goldenUpdateRequested(std::getenv("TIERD_UPDATE_GOLDEN"));
}

}  // namespace tierd::testing

// The golden-file switch (tests/unit/support/Golden.h): only TIERD_UPDATE_GOLDEN=1 rewrites.
#include "tests/unit/support/Golden.h"

#include <doctest/doctest.h>

#include <string>

using tierd::testing::goldenUpdateRequested;

TEST_CASE("only TIERD_UPDATE_GOLDEN=1 rewrites golden files, any other value compares") {
  CHECK(goldenUpdateRequested("1"));
  CHECK_FALSE(goldenUpdateRequested(nullptr));  // unset
  for (const char* v : {"0", "", "yes", "true", "TRUE", "2", "01", " 1", "1 ", "1\n", "on"})
    CHECK_MESSAGE(!goldenUpdateRequested(v), "TIERD_UPDATE_GOLDEN='" << std::string(v) << "'");
}

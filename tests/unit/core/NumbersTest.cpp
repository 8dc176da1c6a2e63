#include <doctest/doctest.h>

#include "tierd/core/Numbers.h"

using namespace tierd;

TEST_CASE("parseU64 takes the whole text and reports garbage and overflow as Input errors") {
  CHECK(parseU64(" 42\n", "x").value() == 42);
  CHECK(parseU64("18446744073709551615", "x").value() == UINT64_MAX);
  auto over = parseU64("18446744073709551616", "f:3");
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().kind == ErrorKind::Input);
  CHECK(over.error().describe() == "f:3: an unsigned integer out of range: '18446744073709551616'");
  CHECK(parseU64("12x", "x").error().message == "expected an unsigned integer, got '12x'");
  CHECK_FALSE(parseU64("-1", "x").ok());
  CHECK_FALSE(parseU64("+1", "x").ok());
  CHECK_FALSE(parseU64("", "x").ok());
  CHECK(parseI64("-9223372036854775808", "x").value() == INT64_MIN);
  CHECK_FALSE(parseI64("9223372036854775808", "x").ok());
}

TEST_CASE("parseU64InRange rejects numbers outside the bounds, however many digits they have") {
  CHECK(parseU64InRange("65535", 0, 65535, "port").value() == 65535);
  CHECK(parseU64InRange("65536", 0, 65535, "port").error().describe() ==
        "port: '65536' is not in 0..65535");
  CHECK(parseU64InRange("1234567890123456789012345", 0, 65535, "port").error().describe() ==
        "port: an unsigned integer out of range: '1234567890123456789012345'");
  CHECK_FALSE(parseU64InRange("0", 1, 10, "n").ok());
}

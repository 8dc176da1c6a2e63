#include <doctest/doctest.h>

#include <cerrno>

#include "tierd/core/Result.h"
#include "tierd/core/Units.h"

using namespace tierd;

TEST_CASE("Result holds a value or an error") {
  Result<int> v = 7;
  CHECK(v.ok());
  CHECK(v.value() == 7);
  Result<int> e = Error::input("bad", "file:3");
  CHECK_FALSE(e.ok());
  CHECK(e.error().kind == ErrorKind::Input);
  CHECK(e.valueOr(3) == 3);
}

TEST_CASE("Error::describe names context, message and errno text") {
  Error e = Error::sys(ENOENT, "cannot open", "/sys/x");
  CHECK(e.describe() == "/sys/x: cannot open (No such file or directory)");
  CHECK(e.within("topology").describe() ==
        "topology: /sys/x: cannot open (No such file or directory)");
  CHECK(Error::input("expected an integer", "").describe() == "expected an integer");
}

TEST_CASE("byte and page size formatting") {
  CHECK(formatBytes(512) == "512 B");
  CHECK(formatBytes(4096) == "4.0 KiB");
  CHECK(formatBytes(3 * kGiB / 2) == "1.5 GiB");
  CHECK(pageSizeName(4096) == "4k");
  CHECK(pageSizeName(64 * kKiB) == "64k");
  CHECK(pageSizeName(2 * kMiB) == "2M");
  CHECK(pageSizeName(kGiB) == "1G");
}

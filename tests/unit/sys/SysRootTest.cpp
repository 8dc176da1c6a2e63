#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tierd/sys/SysRoot.h"

using namespace tierd;

TEST_CASE("SysRoot resolves absolute kernel paths under its root") {
  sys::SysRoot live;
  CHECK(live.isLive());
  CHECK(live.path("/proc/meminfo") == "/proc/meminfo");
  sys::SysRoot fx("/tmp/fx/");
  CHECK_FALSE(fx.isLive());
  CHECK(fx.path("/sys/a") == "/tmp/fx/sys/a");
}

TEST_CASE("SysRoot reads, lists and reports errors with the resolved path") {
  char tmpl[] = "/tmp/sysroot-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  REQUIRE(std::system(("mkdir -p " + dir + "/sys/x").c_str()) == 0);
  std::ofstream(dir + "/sys/x/attr") << "  42\n";
  sys::SysRoot root(dir);
  CHECK(root.readAttr("/sys/x/attr").value() == "42");
  CHECK(root.read("/sys/x/attr").value() == "  42\n");
  CHECK(root.exists("/sys/x"));
  CHECK(root.list("/sys/x").value() == std::vector<std::string>{"attr"});
  auto missing = root.read("/sys/x/nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ENOENT);
  CHECK(missing.error().context == dir + "/sys/x/nope");
  CHECK(root.write("/sys/x/attr", "7").ok());
  CHECK(root.readAttr("/sys/x/attr").value() == "7");
  CHECK_FALSE(root.write("/sys/x/nope", "7").ok());
  REQUIRE(std::system(("rm -rf " + dir).c_str()) == 0);
}

TEST_CASE("retryWhileBusy reads again while DAMON's sysfs answers EBUSY, and only then") {
  // mm/damon/sysfs.c state_show and pid_show answer -EBUSY while damon_sysfs_lock is held.
  int calls = 0;
  auto busyTwice = [&]() -> Result<std::string> {
    if (++calls <= 2)
      return Error::sys(EBUSY, "cannot read", "/sys/kernel/mm/damon/admin/kdamonds/0/state");
    return std::string("on");
  };
  auto r = sys::retryWhileBusy(busyTwice, 5, 0);
  REQUIRE(r.ok());
  CHECK(r.value() == "on");
  CHECK(calls == 3);

  calls = 0;
  auto alwaysBusy = [&]() -> Result<std::string> {
    ++calls;
    return Error::sys(EBUSY, "cannot read", "state");
  };
  auto busy = sys::retryWhileBusy(alwaysBusy, 5, 0);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().code == EBUSY);
  CHECK(calls == 5);  // bounded

  calls = 0;
  auto gone = [&]() -> Result<std::string> {
    ++calls;
    return Error::sys(ENOENT, "cannot open", "state");
  };
  CHECK(sys::retryWhileBusy(gone, 5, 0).error().code == ENOENT);
  CHECK(calls == 1);  // any other error at once
}

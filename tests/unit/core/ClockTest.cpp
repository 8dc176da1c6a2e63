#include <doctest/doctest.h>

#include "tierd/core/Clock.h"

using namespace tierd;

TEST_CASE("the thread's kernel CPU time is a Result that grows with system calls") {
  auto before = threadSystemCpuNs();
  REQUIRE(before.ok());
  for (int i = 0; i < 20000; ++i)
    (void)threadSystemCpuNs();  // getrusage itself is kernel time
  auto after = threadSystemCpuNs();
  REQUIRE(after.ok());
  CHECK(*after >= *before);
  CHECK(*after % 1000 == 0);  // microseconds from ru_stime, in nanoseconds
}

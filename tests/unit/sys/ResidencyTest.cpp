#include <doctest/doctest.h>

#include "tierd/sys/ProcMaps.h"
#include "tierd/sys/Residency.h"

using namespace tierd;
using namespace tierd::sys;

TEST_CASE("residentMemory: pages present per node times page size, file-backed apart") {
  auto vmas = parseNumaMaps(
      "55d0c0000000 default heap anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n"
      "7f0000000000 default file=/usr/lib/libc.so.6 mapped=5 N0=5 kernelpagesize_kB=4\n"
      "7f4000000000 default file=/anon_hugepage\\040(deleted) huge dirty=2 N1=2 "
      "kernelpagesize_kB=2048\n"
      "7f8000000000 bind:1 anon=4 dirty=4 N1=4\n",
      "test");
  REQUIRE(vmas);
  const auto m = residentMemory(vmas.value(), 16384);
  REQUIRE(m.size() == 2);
  CHECK(m.at(0).anon == 2 * 4096);
  CHECK(m.at(0).file == 5 * 4096);
  // hugetlb counts as anon, whatever its file; no kernelpagesize_kB: the base page given.
  CHECK(m.at(1).anon == 1 * 4096 + 2 * 2048 * 1024 + 4 * 16384);
  CHECK(m.at(1).file == 0);
  CHECK(residentMemory({}, 4096).empty());
}

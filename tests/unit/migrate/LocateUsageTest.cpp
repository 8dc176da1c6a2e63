#include <doctest/doctest.h>

#include <cerrno>

#include "tierd/core/Units.h"
#include "tierd/migrate/LocateUsage.h"

using namespace tierd;
using namespace tierd::migrate;

namespace {

sys::SmapsVma vma(uint64_t start, uint64_t end) {
  sys::SmapsVma v;
  v.start = start;
  v.end = end;
  return v;
}

}  // namespace

TEST_CASE("locate runs that span two VMAs are split between them by page kind and status") {
  constexpr uint64_t kBase = 4 * kKiB, kThp = 2 * kMiB;
  std::vector<sys::SmapsVma> vmas = {vma(0x200000, 0x600000), vma(0x600000, 0x800000),
                                     vma(0x40000000, 0x80000000)};
  vmas[2].vmFlags = {"ht"};
  vmas[2].kernelPageSize = kGiB;
  LocateResult loc;
  loc.runs = {{0x200000, 0x200000, kThp, 0},   // a THP on node 0
              {0x400000, 0x300000, kBase, 1},  // base pages on node 1, into the second VMA
              {0x700000, 0x100000, kBase, -ENOENT},
              {0x40000000, kGiB, kGiB, 1}};  // a 1 GiB hugetlb page
  auto perVma = attributeRuns(loc, vmas, kBase, kThp);
  REQUIRE(perVma.size() == 3);
  CHECK(perVma[0].nodes == std::map<int, std::map<std::string, uint64_t>>{{0, {{"thp", 0x200000}}},
                                                                          {1, {{"4k", 0x200000}}}});
  CHECK(perVma[1].nodes == std::map<int, std::map<std::string, uint64_t>>{{1, {{"4k", 0x100000}}}});
  CHECK(perVma[1].absent == std::map<std::string, uint64_t>{{"not_present", 0x100000}});
  CHECK(perVma[2].nodes ==
        std::map<int, std::map<std::string, uint64_t>>{{1, {{"hugetlb-1G", kGiB}}}});
  PageUsage total;
  for (const auto& u : perVma)
    total.add(u);
  CHECK(total.present() == 0x200000 + 0x300000 + kGiB);
  CHECK(total.absent.at("not_present") == 0x100000);
}

TEST_CASE("a VMA on one node counts its AnonHugePages as THP, not as base pages") {
  constexpr uint64_t kBase = 4 * kKiB, kThp = 2 * kMiB;
  std::vector<sys::SmapsVma> vmas = {vma(0x200000, 0xa00000)};
  vmas[0].anonHugePages = 6 * kMiB;
  LocateResult loc;
  loc.runs = {{0x200000, 8 * kMiB, kBase, 0}};  // answered from numa_maps: one run of base pages
  auto perVma = attributeRuns(loc, vmas, kBase, kThp);
  REQUIRE(perVma.size() == 1);
  CHECK(perVma[0].nodes.at(0) ==
        std::map<std::string, uint64_t>{{"4k", 2 * kMiB}, {"thp", 6 * kMiB}});
}

TEST_CASE("negative locate statuses have stable names") {
  CHECK(locateStatusKey(-ENOENT) == "not_present");
  CHECK(locateStatusKey(-EFAULT) == "no_page");
  CHECK(locateStatusKey(-EACCES) == "EACCES");
}

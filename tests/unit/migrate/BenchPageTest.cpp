// The bench's --page values are the page kinds tierctl locate prints (tierd/migrate/Bench.h).
#include "tierd/migrate/Bench.h"

#include <doctest/doctest.h>

#include "tierd/core/Units.h"

using namespace tierd;
using namespace tierd::migrate;

TEST_CASE("bench --page takes the page kinds locate prints, and prints them back the same") {
  CHECK(benchPageName(BenchPage::Base4k) == pageKindName(PageKind::Base, 4 * kKiB));
  CHECK(benchPageName(BenchPage::Thp) == pageKindName(PageKind::Thp, 2 * kMiB));
  CHECK(benchPageName(BenchPage::Hugetlb2M) == "hugetlb-2M");
  CHECK(benchPageName(BenchPage::Hugetlb1G) == "hugetlb-1G");
  for (BenchPage p :
       {BenchPage::Base4k, BenchPage::Thp, BenchPage::Hugetlb2M, BenchPage::Hugetlb1G}) {
    auto parsed = parseBenchPage(benchPageName(p));
    REQUIRE(parsed.ok());
    CHECK(parsed.value() == p);
  }
  // "2m" used to mean hugetlb without saying so; "2M" alone is a size, not a kind.
  for (const char* old : {"2m", "1g", "2M", "1G"}) {
    INFO(old);
    CHECK_FALSE(parseBenchPage(old).ok());
  }
}

TEST_CASE("bench ratios: tierd vs the raw call paired per run, and their median") {
  MethodRuns tierdRuns;
  MethodRuns raw;
  tierdRuns.gibPerS = {1.0, 3.0, 2.0, 5.0};
  raw.gibPerS = {2.0, 3.0, 0.0, 4.0};  // run 3: nothing measured, skipped
  const auto r = pairedRatios(tierdRuns, raw);
  CHECK(r == std::vector<double>{0.5, 1.0, 1.25});
  CHECK(median(r) == 1.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({}) == 0);
  raw.gibPerS.resize(1);  // fewer runs in one method: only the pairs that exist
  CHECK(pairedRatios(tierdRuns, raw) == std::vector<double>{0.5});
}

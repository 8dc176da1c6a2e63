// The move-outcome and page-kind vocabularies (tierd/core/Migration.h, tierd/core/Units.h).
#include "tierd/core/Migration.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "tierd/core/Units.h"

using namespace tierd;

TEST_CASE("every move outcome has one JSON name, and the metrics spell it the same way") {
  std::set<std::string> names;
  for (size_t i = 0; i < kMoveOutcomeCount; ++i) {
    const auto o = static_cast<MoveOutcome>(i);
    const MoveOutcomeInfo& info = moveOutcomeInfo(o);
    INFO(info.name);
    CHECK(info.outcome == o);
    CHECK(std::string(moveOutcomeName(o)) == info.name);
    CHECK(names.insert(info.name).second);
    const std::string label = info.metricLabel;
    // Counted outcomes keep their name, except the two failures without a cause of their own.
    if (!label.empty() && label != "failed") CHECK(label == info.name);
  }
  CHECK(std::string(moveOutcomeName(MoveOutcome::AlreadyThere)) == "already_there");
  CHECK(std::string(moveOutcomeInfo(MoveOutcome::NotMigrated).metricLabel) == "failed");
  CHECK(std::string(moveOutcomeInfo(MoveOutcome::NotAttempted).metricLabel).empty());
}

TEST_CASE("the policy learns one outcome per range: the gravest its pages had") {
  RangeResult r;
  CHECK_FALSE(dominantOutcome(r).has_value());
  r.outcomes[MoveOutcome::NotAttempted] = 3;
  CHECK_FALSE(dominantOutcome(r).has_value());
  r.outcomes[MoveOutcome::AlreadyThere] = 1;
  CHECK(dominantOutcome(r) == MoveOutcome::AlreadyThere);
  r.outcomes[MoveOutcome::Moved] = 1;
  CHECK(dominantOutcome(r) == MoveOutcome::Moved);
  r.outcomes[MoveOutcome::NotMigrated] = 1;  // the kernel gave up on a page: backs off like busy
  CHECK(dominantOutcome(r) == MoveOutcome::Busy);
  r.outcomes[MoveOutcome::NoMemory] = 1;
  CHECK(dominantOutcome(r) == MoveOutcome::NoMemory);
  r.outcomes[MoveOutcome::Denied] = 1;
  CHECK(dominantOutcome(r) == MoveOutcome::Denied);
  r.outcomes[MoveOutcome::NodeNotAllowed] = 1;
  CHECK(dominantOutcome(r) == MoveOutcome::NodeNotAllowed);
  r.dropped = true;
  CHECK(dominantOutcome(r) == MoveOutcome::Gone);
  CHECK(moveOutcomeInfo(MoveOutcome::Busy).reaction == PolicyReaction::BackOff);
  CHECK(moveOutcomeInfo(MoveOutcome::NodeNotAllowed).reaction == PolicyReaction::BackOff);
  CHECK(moveOutcomeInfo(MoveOutcome::Gone).reaction == PolicyReaction::Drop);
  CHECK(moveOutcomeInfo(MoveOutcome::Denied).reaction == PolicyReaction::Hold);
}

TEST_CASE("page kinds are spelled one way: hugetlb says so, THP is thp, base pages their size") {
  CHECK(pageKindName(PageKind::Base, 4 * kKiB) == "4k");
  CHECK(pageKindName(PageKind::Base, 64 * kKiB) == "64k");
  CHECK(pageKindName(PageKind::Thp, 2 * kMiB) == "thp");
  CHECK(pageKindName(PageKind::Hugetlb, 2 * kMiB) == "hugetlb-2M");
  CHECK(pageKindName(PageKind::Hugetlb, kGiB) == "hugetlb-1G");
}

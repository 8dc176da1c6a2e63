#pragma once
/// \file
/// Byte-size constants and helpers. Sizes are bytes (uint64_t) everywhere in tierd; names with
/// _kib/_mib/_gib say otherwise.

#include <cstdint>
#include <string>

namespace tierd {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

/// Formats bytes for humans with a binary unit: "512 B", "4.0 KiB", "1.5 GiB".
std::string formatBytes(uint64_t bytes);

/// Formats a page size the way the field names it: "4k", "64k", "2M", "1G" (exact powers only;
/// other sizes fall back to "<n>k").
std::string pageSizeName(uint64_t bytes);

/// How memory is mapped: the page kinds tierctl reads and prints (locate, bench --page).
/// The metrics' `page_size` label is a size only: THP and hugetlb 2M pages are both "2M" there.
enum class PageKind {
  Base,     ///< base pages (no huge page, or THP split): "4k" (pageSizeName of the base size)
  Thp,      ///< transparent huge pages (PMD size): "thp"
  Hugetlb,  ///< hugetlbfs / MAP_HUGETLB pages: "hugetlb-" + pageSizeName ("hugetlb-2M",
            ///< "hugetlb-1G")
};

/// The one spelling of a page kind of `bytes`-sized pages, in and out: "4k" (or "64k"... for
/// Base), "thp" (Thp, any size), "hugetlb-2M" / "hugetlb-1G" (Hugetlb).
std::string pageKindName(PageKind kind, uint64_t bytes);

}  // namespace tierd

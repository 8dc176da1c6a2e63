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

}  // namespace tierd

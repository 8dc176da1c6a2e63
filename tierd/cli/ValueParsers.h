#pragma once
/// \file
/// Strict parsers for option values of the migration commands: byte sizes and address ranges.

#include <cstdint>
#include <string>
#include <utility>

#include "tierd/core/Result.h"

namespace tierd::cli {

/// Parses a byte size: digits with an optional binary suffix K, M, G or T (optionally followed
/// by "iB" or "B"): "4096", "256M", "1G", "2GiB". Errors: Input naming `context` (the option).
Result<uint64_t> parseSize(const std::string& text, const std::string& context);

/// Parses "A-B" with A and B hexadecimal addresses (with or without 0x), A < B, as in
/// /proc/PID/maps. Returns {A, B}. Errors: Input naming `context`.
Result<std::pair<uint64_t, uint64_t>> parseAddressRange(const std::string& text,
                                                        const std::string& context);

}  // namespace tierd::cli

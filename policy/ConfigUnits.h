#pragma once
/// \file
/// Strict parsers and printers for the unit strings of the config (docs/configuration.md,
/// "Units"). The rules, chosen so that a typo can never be read as a different value:
///  - bytes: a non-negative decimal integer immediately followed by one of B, KiB, MiB, GiB, TiB
///    ("2GiB", "512MiB"). No space, no sign, no fraction, case-sensitive; SI units ("2GB") and
///    lower case ("2gib") are rejected with a hint, as is a bare number.
///  - duration: a non-negative decimal integer followed by ns, us, ms, s, m or h ("500ms", "30s").
///  - percent: a decimal number with at most 3 fraction digits followed by "%" ("25%", "2.5%").
/// Values beyond the caller's bound (by default: bytes that do not fit 64 bits, durations that do
/// not fit a signed 64-bit count of nanoseconds, as all time arithmetic is int64) are errors,
/// never wrapped. Errors are plain messages (the caller adds where).

#include <cstdint>
#include <string>
#include <string_view>

#include "tierd/core/Result.h"

namespace tierd::policy {

/// The most nanoseconds a duration may have: INT64_MAX (about 292 years).
inline constexpr uint64_t kMaxDurationNs = static_cast<uint64_t>(INT64_MAX);

/// Parses a byte size ("2GiB" -> 2147483648): digits and a binary unit, B, KiB, MiB, GiB or TiB,
/// or their one-letter forms K, M, G, T ("4G" == "4GiB"). Errors: empty, no unit, unknown unit
/// (SI "GB" and lower case "g" included), more than `maxBytes` ("is too large (at most ...)"),
/// overflow.
Result<uint64_t> parseByteSize(std::string_view text, uint64_t maxBytes = UINT64_MAX);
/// Parses a duration into nanoseconds ("500ms" -> 500000000). Errors as parseByteSize, with the
/// bound `maxNs`.
Result<uint64_t> parseDuration(std::string_view text, uint64_t maxNs = kMaxDurationNs);
/// Parses a percentage ("25%" -> 25.0, "2.5%" -> 2.5), 0 <= value; range is the caller's.
Result<double> parsePercent(std::string_view text);

/// Formats bytes with the largest binary unit that divides them exactly ("8GiB", "1536MiB",
/// "17B"); parseByteSize(formatByteSize(x)) == x.
std::string formatByteSize(uint64_t bytes);
/// Formats nanoseconds with the largest unit that divides them exactly ("500ms", "2m", "7ns").
std::string formatDuration(uint64_t ns);
/// Formats a percentage with up to 3 fraction digits and no trailing zeros ("25%", "2.5%").
std::string formatPercent(double percent);

/// Levenshtein edit distance between two strings (for "did you mean").
size_t editDistance(std::string_view a, std::string_view b);

}  // namespace tierd::policy

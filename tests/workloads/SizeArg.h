#pragma once
/// \file
/// The one size grammar of the rig's workload tools (tierd-gups, tierd-churn, tierd-holdmem,
/// tierd-memsim): decimal digits and an optional binary unit, checked for overflow, so no tool
/// wraps "17179869185G" around to 1 GiB.

#include <cstdint>
#include <string>
#include <string_view>

#include "tierd/core/Numbers.h"
#include "tierd/core/Units.h"

namespace tierd::workloads {

/// Parses BYTES[unit]: decimal digits, then "", "B", "K"/"KiB", "M"/"MiB", "G"/"GiB" or
/// "T"/"TiB" (powers of 1024; every size tierd.toml and tierctl take, plus bare bytes), at most
/// `maxBytes`. Errors (Input, naming `context`, usually the option): no digits,
/// an unknown unit, or a size beyond `maxBytes` (or 2^64).
inline Result<uint64_t> parseSizeArg(std::string_view text, const std::string& context,
                                     uint64_t maxBytes = UINT64_MAX) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    ++i;
  if (i == 0) return Error::input("expected BYTES[K|M|G|T], got " + quoteForError(text), context);
  auto n = parseU64(text.substr(0, i), context);
  if (!n) return n;
  const std::string_view unit = text.substr(i);
  uint64_t mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  if (unit == "K" || unit == "KiB") mult = kKiB;
  if (unit == "M" || unit == "MiB") mult = kMiB;
  if (unit == "G" || unit == "GiB") mult = kGiB;
  if (unit == "T" || unit == "TiB") mult = kGiB * 1024;
  if (mult == 0) return Error::input("unknown size unit in " + quoteForError(text), context);
  if (*n > maxBytes / mult)
    return Error::input(
        "size " + quoteForError(text) + " is more than " + std::to_string(maxBytes) + " bytes",
        context);
  return *n * mult;
}

}  // namespace tierd::workloads

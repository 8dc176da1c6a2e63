#pragma once
/// \file
/// Strict decimal integer parsing, the one conversion every target may use (policy and metrics
/// depend on tierd_core only, so these live here rather than in tierd/sys). None returns 0 for
/// garbage and none throws: empty text, a sign where none belongs, trailing junk and overflow are
/// all Input errors naming `context` and quoting the text. tierd/sys/Parsers.h re-exports them
/// for the kernel-format parsers.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "tierd/core/Result.h"

namespace tierd {

/// `s` without leading and trailing blanks, tabs, newlines and carriage returns.
std::string_view trimBlanks(std::string_view s);

/// `s` in single quotes for an error message, cut to 80 characters ("'abc'", "'aaaa...'").
std::string quoteForError(std::string_view s);

/// Parses the whole of `text` (surrounding blanks allowed) as a base-10 integer of type T (no
/// '+'; '-' only for signed T). Errors (Input, naming `context`): "expected <what>, got 'x'" and
/// "<what> out of range: 'x'". `what` names the expected thing ("an unsigned integer", "an id").
template <typename T>
Result<T> parseDecimal(std::string_view text, const std::string& context, const char* what) {
  const std::string_view t = trimBlanks(text);
  if (t.empty()) return Error::input(std::string("expected ") + what + ", got empty text", context);
  if (t.front() == '+' || (!std::is_signed_v<T> && t.front() == '-'))
    return Error::input(std::string("expected ") + what + ", got " + quoteForError(t), context);
  T v{};
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range)
    return Error::input(std::string(what) + " out of range: " + quoteForError(t), context);
  if (ec != std::errc() || p != t.data() + t.size())
    return Error::input(std::string("expected ") + what + ", got " + quoteForError(t), context);
  return v;
}

/// Parses a whole string (surrounding blanks allowed) as a base-10 unsigned 64-bit integer.
Result<uint64_t> parseU64(std::string_view text, const std::string& context);

/// Parses a whole string (surrounding blanks allowed) as a base-10 signed 64-bit integer.
Result<int64_t> parseI64(std::string_view text, const std::string& context);

/// parseU64, then checks lo <= value <= hi. Errors (Input, naming `context`) as parseU64, and
/// "'x' is not in lo..hi" for a number outside the bounds (a 25-digit port: out of range).
Result<uint64_t> parseU64InRange(std::string_view text, uint64_t lo, uint64_t hi,
                                 const std::string& context);

}  // namespace tierd

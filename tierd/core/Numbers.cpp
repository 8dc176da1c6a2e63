#include "tierd/core/Numbers.h"

namespace tierd {

std::string_view trimBlanks(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

std::string quoteForError(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  out += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  out += "'";
  return out;
}

Result<uint64_t> parseU64(std::string_view text, const std::string& context) {
  return parseDecimal<uint64_t>(text, context, "an unsigned integer");
}

Result<int64_t> parseI64(std::string_view text, const std::string& context) {
  return parseDecimal<int64_t>(text, context, "an integer");
}

Result<uint64_t> parseU64InRange(std::string_view text, uint64_t lo, uint64_t hi,
                                 const std::string& context) {
  auto v = parseU64(text, context);
  if (!v) return v;
  if (*v < lo || *v > hi)
    return Error::input(quoteForError(trimBlanks(text)) + " is not in " + std::to_string(lo) +
                            ".." + std::to_string(hi),
                        context);
  return v;
}

}  // namespace tierd

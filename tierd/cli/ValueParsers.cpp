#include "tierd/cli/ValueParsers.h"

#include <charconv>

namespace tierd::cli {

Result<uint64_t> parseSize(const std::string& text, const std::string& context) {
  const auto bad = [&] {
    return Error::input("expected a size such as 4096, 256M, 1G or 2GiB, got '" + text + "'",
                        context);
  };
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data()) return bad();
  std::string suffix(p, text.data() + text.size());
  uint64_t mult = 1;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K':
      case 'k':
        mult = 1ull << 10;
        break;
      case 'M':
      case 'm':
        mult = 1ull << 20;
        break;
      case 'G':
      case 'g':
        mult = 1ull << 30;
        break;
      case 'T':
      case 't':
        mult = 1ull << 40;
        break;
      default:
        return bad();
    }
    std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "iB" && rest != "B") return bad();
  }
  if (v == 0 || v > UINT64_MAX / mult) return bad();
  return v * mult;
}

Result<std::pair<uint64_t, uint64_t>> parseAddressRange(const std::string& text,
                                                        const std::string& context) {
  const auto bad = [&] {
    return Error::input(
        "expected a hex address range A-B (e.g. 7f00000000-7f40000000), got '" + text + "'",
        context);
  };
  size_t dash = text.find('-');
  if (dash == std::string::npos) return bad();
  auto hex = [](std::string s, uint64_t& out) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
    return ec == std::errc() && p == s.data() + s.size();
  };
  uint64_t a = 0;
  uint64_t b = 0;
  if (!hex(text.substr(0, dash), a) || !hex(text.substr(dash + 1), b) || a >= b) return bad();
  return std::make_pair(a, b);
}

}  // namespace tierd::cli

#include "tierd/cli/ValueParsers.h"

#include <charconv>

#include "policy/ConfigUnits.h"

namespace tierd::cli {

Result<uint64_t> parseBoundedInteger(std::string_view text, uint64_t lo, uint64_t hi,
                                     const std::string& context) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi)
    return Error::input("expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
                            ", got '" + std::string(text) + "'",
                        context);
  return v;
}

Result<pid_t> parsePid(std::string_view text, const std::string& context) {
  auto v = parseBoundedInteger(text, 1, kMaxPidOption, context);
  if (!v)
    return Error::input("expected a process id (1.." + std::to_string(kMaxPidOption) + "), got '" +
                            std::string(text) + "'",
                        context);
  return static_cast<pid_t>(v.value());
}

Result<uint64_t> parseSizeOption(std::string_view text, uint64_t lo, uint64_t hi,
                                 const std::string& context) {
  auto v = policy::parseByteSize(text, hi);
  if (!v) return Error::input(v.error().message + " (e.g. \"1GiB\", \"64MiB\")", context);
  if (v.value() < lo)
    return Error::input("byte size '" + std::string(text) + "' is too small (at least " +
                            policy::formatByteSize(lo) + ")",
                        context);
  return v.value();
}

Result<uint64_t> parseDurationOption(std::string_view text, uint64_t maxNs,
                                     const std::string& context) {
  auto v = policy::parseDuration(text, maxNs);
  if (!v) return Error::input(v.error().message + " (e.g. \"30s\", \"500ms\")", context);
  return v.value();
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

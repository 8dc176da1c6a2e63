#include "policy/ConfigUnits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <vector>

namespace tierd::policy {
namespace {

struct UnitDef {
  const char* name;
  uint64_t factor;
  const char* shortName = nullptr;  ///< also accepted on input ("G" for "GiB"); never printed
};

// "4G" is "4GiB": the one-letter binary units operators type (free -g, numfmt --to=iec, the rig's
// workload tools), accepted everywhere a byte size is, and printed as GiB.
const UnitDef kByteUnits[] = {{"TiB", 1024ull * 1024 * 1024 * 1024, "T"},
                              {"GiB", 1024ull * 1024 * 1024, "G"},
                              {"MiB", 1024ull * 1024, "M"},
                              {"KiB", 1024, "K"},
                              {"B", 1}};
const UnitDef kDurationUnits[] = {{"h", 3600ull * 1000000000},
                                  {"m", 60ull * 1000000000},
                                  {"s", 1000000000},
                                  {"ms", 1000000},
                                  {"us", 1000},
                                  {"ns", 1}};

// Splits "123abc" into digits and suffix; fails when there are no leading digits.
bool splitNumber(std::string_view text, std::string_view& digits, std::string_view& suffix) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  digits = text.substr(0, i);
  suffix = text.substr(i);
  return !digits.empty();
}

Result<uint64_t> parseDigits(std::string_view digits) {
  uint64_t v = 0;
  for (char c : digits) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return Error::input("value too large for 64 bits", "");
    v = v * 10 + d;
  }
  return v;
}

std::string unitList(const UnitDef* units, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i)
    out += std::string(i ? ", " : "") + units[i].name;
  return out;
}

std::string formatWithUnits(uint64_t v, const UnitDef* units, size_t n);  // below

Result<uint64_t> parseWithUnits(std::string_view text, const UnitDef* units, size_t n,
                                const char* what, const char* example, uint64_t max) {
  std::string quoted = "'" + std::string(text) + "'";
  if (text.empty()) return Error::input(std::string("empty ") + what, "");
  if (text.front() == '-' || text.front() == '+')
    return Error::input(std::string(what) + " " + quoted + " must not have a sign", "");
  std::string_view digits, suffix;
  if (!splitNumber(text, digits, suffix))
    return Error::input("invalid " + std::string(what) + " " + quoted +
                            ": expected a number and a unit, like '" + example + "'",
                        "");
  if (!suffix.empty() && (suffix.front() == ' ' || suffix.front() == '\t'))
    return Error::input("invalid " + std::string(what) + " " + quoted +
                            ": no space allowed between number and unit",
                        "");
  if (!suffix.empty() && suffix.front() == '.')
    return Error::input("invalid " + std::string(what) + " " + quoted +
                            ": fractions are not allowed; use a smaller unit",
                        "");
  if (suffix.empty())
    return Error::input("invalid " + std::string(what) + " " + quoted + ": a unit is required (" +
                            unitList(units, n) + ")",
                        "");
  for (size_t i = 0; i < n; ++i) {
    if (suffix != units[i].name && (units[i].shortName == nullptr || suffix != units[i].shortName))
      continue;
    auto v = parseDigits(digits);
    if (!v) return Error::input(std::string(what) + " " + quoted + " is too large", "");
    if (*v != 0 && *v > UINT64_MAX / units[i].factor)
      return Error::input(std::string(what) + " " + quoted + " is too large", "");
    if (*v * units[i].factor > max)
      return Error::input(std::string(what) + " " + quoted + " is too large (at most " +
                              formatWithUnits(max, units, n) + ")",
                          "");
    return *v * units[i].factor;
  }
  std::string hint;
  std::string lower(suffix);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (size_t i = 0; i < n; ++i) {
    std::string u = units[i].name;
    std::string ul = u;
    std::transform(ul.begin(), ul.end(), ul.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    // "GB" -> GiB, "gib" -> GiB, "sec" stays unknown.
    bool si = ul.size() == 3 && lower.size() == 2 && lower[0] == ul[0] && lower[1] == 'b';
    if (lower == ul || si) hint = " (did you mean '" + std::string(digits) + u + "'?)";
  }
  return Error::input("invalid " + std::string(what) + " " + quoted + ": unknown unit '" +
                          std::string(suffix) + "'; units are " + unitList(units, n) + hint,
                      "");
}

// Formats with the largest unit that divides exactly.
std::string formatWithUnits(uint64_t v, const UnitDef* units, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (v != 0 && v % units[i].factor == 0)
      return std::to_string(v / units[i].factor) + units[i].name;
  return std::to_string(v) + units[n - 1].name;
}

}  // namespace

Result<uint64_t> parseByteSize(std::string_view text, uint64_t maxBytes) {
  return parseWithUnits(text, kByteUnits, std::size(kByteUnits), "byte size", "2GiB", maxBytes);
}

Result<uint64_t> parseDuration(std::string_view text, uint64_t maxNs) {
  return parseWithUnits(text, kDurationUnits, std::size(kDurationUnits), "duration", "500ms",
                        maxNs);
}

Result<double> parsePercent(std::string_view text) {
  std::string quoted = "'" + std::string(text) + "'";
  if (text.empty()) return Error::input("empty percentage", "");
  if (text.front() == '-' || text.front() == '+')
    return Error::input("percentage " + quoted + " must not have a sign", "");
  std::string_view digits, rest;
  if (!splitNumber(text, digits, rest) || rest.empty() || rest.back() != '%')
    return Error::input(
        "invalid percentage " + quoted + ": expected a number followed by '%', like '25%'", "");
  rest.remove_suffix(1);
  if (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
    return Error::input("invalid percentage " + quoted + ": no space allowed before '%'", "");
  std::string_view frac;
  if (!rest.empty()) {
    if (rest.front() != '.' || rest.size() < 2 || rest.size() > 4)
      return Error::input(
          "invalid percentage " + quoted + ": expected up to 3 digits after the point, then '%'",
          "");
    frac = rest.substr(1);
    for (char c : frac)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        return Error::input("invalid percentage " + quoted + ": expected a number followed by '%'",
                            "");
  }
  if (digits.size() > 6) return Error::input("percentage " + quoted + " is too large", "");
  auto whole = parseDigits(digits);
  auto fr = frac.empty() ? Result<uint64_t>(0) : parseDigits(frac);
  double v = static_cast<double>(*whole);
  if (!frac.empty())
    v += static_cast<double>(*fr) / std::pow(10.0, static_cast<double>(frac.size()));
  return v;
}

std::string formatByteSize(uint64_t bytes) {
  return formatWithUnits(bytes, kByteUnits, std::size(kByteUnits));
}

std::string formatDuration(uint64_t ns) {
  return formatWithUnits(ns, kDurationUnits, std::size(kDurationUnits));
}

std::string formatPercent(double percent) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", percent);
  std::string s = buf;
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + "%";
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace tierd::policy

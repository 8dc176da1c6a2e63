#include "tierd/sys/Parsers.h"

#include <limits>

#include "tierd/core/Numbers.h"
#include "tierd/sys/Lines.h"

namespace tierd::sys {
namespace {

std::vector<std::string_view> splitBlanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
      ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t')
      ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::optional<uint64_t> parseHexDigits(std::string_view digits, bool upperOk) {
  if (digits.empty() || digits.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (upperOk && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

Result<std::set<int>> parseIdList(std::string_view text, const std::string& context) {
  std::set<int> ids;
  std::string_view t = trimBlanks(text);
  if (t.empty()) return ids;
  size_t pos = 0;
  while (pos <= t.size()) {
    size_t comma = t.find(',', pos);
    if (comma == std::string_view::npos) comma = t.size();
    std::string_view item = t.substr(pos, comma - pos);
    if (item.empty()) return Error::input("empty item in id list " + quoteForError(t), context);
    size_t dash = item.find('-');
    auto first = parseDecimal<int>(item.substr(0, dash), context, "an id");
    if (!first || first.value() < 0)
      return Error::input("bad id " + quoteForError(item) + " in list " + quoteForError(t),
                          context);
    int last = first.value();
    if (dash != std::string_view::npos) {
      auto l = parseDecimal<int>(item.substr(dash + 1), context, "an id");
      if (!l || l.value() < first.value())
        return Error::input("bad range " + quoteForError(item) + " in list " + quoteForError(t),
                            context);
      last = l.value();
    }
    if (last - first.value() > 1 << 20)
      return Error::input("range too large " + quoteForError(item), context);
    for (int i = first.value(); i <= last; ++i)
      ids.insert(i);
    pos = comma + 1;
    if (comma == t.size()) break;
  }
  return ids;
}

std::string formatIdList(const std::set<int>& ids) {
  std::string out;
  auto it = ids.begin();
  while (it != ids.end()) {
    int start = *it;
    int end = start;
    auto next = std::next(it);
    while (next != ids.end() && *next == end + 1) {
      end = *next;
      ++next;
    }
    if (!out.empty()) out += ",";
    out += std::to_string(start);
    if (end != start) out += "-" + std::to_string(end);
    it = next;
  }
  return out;
}

Result<std::map<std::string, uint64_t>> parseMeminfo(std::string_view text,
                                                     const std::string& context) {
  std::map<std::string, uint64_t> out;
  Status s =
      forEachLine(text, context, [&](std::string_view line, const std::string& where) -> Status {
        auto f = splitBlanks(line);
        size_t i = 0;
        if (f.size() >= 2 && f[0] == "Node") i = 2;  // "Node 0 MemTotal: ..."
        if (i == 2) {
          auto n = parseU64(f[1], where);
          if (!n) return Error::input("bad node number in " + quoteForError(line), where);
        }
        if (f.size() < i + 2 || f.size() > i + 3 || f[i].size() < 2 || f[i].back() != ':')
          return Error::input("expected 'Key: value [kB]', got " + quoteForError(line), where);
        auto v = parseU64(f[i + 1], where);
        if (!v) return v.error();
        uint64_t value = v.value();
        if (f.size() == i + 3) {
          if (f[i + 2] != "kB")
            return Error::input("unknown unit in " + quoteForError(line), where);
          if (value > std::numeric_limits<uint64_t>::max() / 1024)
            return Error::input("value out of range in " + quoteForError(line), where);
          value *= 1024;
        }
        out[std::string(f[i].substr(0, f[i].size() - 1))] = value;
        return Ok{};
      });
  if (!s) return s.error();
  return out;
}

Result<std::map<std::string, int64_t>> parseKeyValue(std::string_view text,
                                                     const std::string& context) {
  std::map<std::string, int64_t> out;
  Status s =
      forEachLine(text, context, [&](std::string_view line, const std::string& where) -> Status {
        auto f = splitBlanks(line);
        if (f.size() != 2)
          return Error::input("expected 'key value', got " + quoteForError(line), where);
        auto v = parseI64(f[1], where);
        if (!v) return v.error();
        out[std::string(f[0])] = v.value();
        return Ok{};
      });
  if (!s) return s.error();
  return out;
}

Result<std::string> parseBracketChoice(std::string_view text, const std::string& context) {
  std::string active;
  int count = 0;
  for (std::string_view w : splitBlanks(trimBlanks(text))) {
    if (w.size() >= 3 && w.front() == '[' && w.back() == ']') {
      active = std::string(w.substr(1, w.size() - 2));
      ++count;
    }
  }
  if (count != 1)
    return Error::input(
        "expected exactly one [bracketed] choice, got " + quoteForError(trimBlanks(text)), context);
  return active;
}

Result<std::vector<uint64_t>> parseU64Row(std::string_view text, const std::string& context) {
  std::vector<uint64_t> out;
  std::string_view t = trimBlanks(text);
  if (t.find('\n') != std::string_view::npos)
    return Error::input("expected one line, got " + quoteForError(t), context);
  for (std::string_view w : splitBlanks(t)) {
    auto v = parseU64(w, context);
    if (!v) return Error::input("expected integers, got " + quoteForError(t), context);
    out.push_back(v.value());
  }
  if (out.empty()) return Error::input("expected integers, got empty text", context);
  return out;
}

Result<uint64_t> parseKbSize(std::string_view text, const std::string& context) {
  std::string_view t = trimBlanks(text);
  if (t.size() < 3 || t.substr(t.size() - 2) != "kB")
    return Error::input("expected '<n>kB', got " + quoteForError(t), context);
  auto v = parseU64(t.substr(0, t.size() - 2), context);
  if (!v) return Error::input("expected '<n>kB', got " + quoteForError(t), context);
  if (v.value() == 0 || v.value() > std::numeric_limits<uint64_t>::max() / 1024)
    return Error::input("size out of range: " + quoteForError(t), context);
  return v.value() * 1024;
}

Result<uint64_t> parseStatField(std::string_view stat, int wanted, const std::string& context) {
  if (wanted < 3)
    return Error::input("field " + std::to_string(wanted) + " is not numeric", context);
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return Error::input("no ')' after the comm field", context);
  // After "pid (comm)" come field 3 (state), 4 (ppid), ...
  size_t pos = close + 1;
  for (int field = 3; field <= wanted; ++field) {
    while (pos < stat.size() && stat[pos] == ' ')
      ++pos;
    const size_t end = stat.find(' ', pos);
    const size_t stop = end == std::string_view::npos ? stat.size() : end;
    if (pos >= stat.size() || stop == pos)
      return Error::input("truncated: no field " + std::to_string(field), context);
    if (field == wanted) {
      std::string_view value = stat.substr(pos, stop - pos);
      while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
        value.remove_suffix(1);
      return parseU64(value, context + ": field " + std::to_string(wanted));
    }
    pos = stop;
  }
  return Error::input("truncated", context);
}

Result<uint64_t> parseStatStartTime(std::string_view stat, const std::string& context) {
  return parseStatField(stat, 22, context);
}

Result<uint64_t> parseStatCpuTicks(std::string_view stat, const std::string& context) {
  auto utime = parseStatField(stat, 14, context);
  if (!utime) return utime.error();
  auto stime = parseStatField(stat, 15, context);
  if (!stime) return stime.error();
  return utime.value() + stime.value();
}

std::string_view takeLine(std::string_view& text) {
  const size_t nl = text.find('\n');
  const std::string_view line = text.substr(0, nl);
  text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  return line;
}

Result<std::vector<BuddyZone>> parseBuddyinfo(std::string_view text, const std::string& context) {
  std::vector<BuddyZone> out;
  size_t lineNo = 0;
  while (!text.empty()) {
    const std::string_view line = takeLine(text);
    ++lineNo;
    const std::string where = context + ":" + std::to_string(lineNo);
    if (trimBlanks(line).empty()) continue;
    // "Node 0, zone   Normal   9482 ..." -> "Node", "0,", "zone", "Normal", counts...
    std::vector<std::string_view> f = splitBlanks(line);
    if (f.size() < 5 || f[0] != "Node" || f[1].size() < 2 || f[1].back() != ',' || f[2] != "zone")
      return Error::input("expected 'Node N, zone NAME counts...', got " + quoteForError(line),
                          where);
    auto node = parseU64(f[1].substr(0, f[1].size() - 1), where);
    if (!node || node.value() > static_cast<uint64_t>(std::numeric_limits<int>::max()))
      return Error::input("bad node id in " + quoteForError(line), where);
    BuddyZone z;
    z.node = static_cast<int>(node.value());
    z.zone = std::string(f[3]);
    for (size_t i = 4; i < f.size(); ++i) {
      auto n = parseU64(f[i], where);
      if (!n) return Error::input("expected free block counts, got " + quoteForError(line), where);
      z.freeBlocks.push_back(n.value());
    }
    if (!out.empty() && z.freeBlocks.size() != out.front().freeBlocks.size())
      return Error::input("expected " + std::to_string(out.front().freeBlocks.size()) +
                              " orders, got " + std::to_string(z.freeBlocks.size()),
                          where);
    out.push_back(std::move(z));
  }
  return out;
}

uint64_t freeBytesAtOrder(const std::vector<BuddyZone>& zones, int node, unsigned minOrder,
                          uint64_t basePageSize) {
  uint64_t bytes = 0;
  for (const BuddyZone& z : zones) {
    if (z.node != node) continue;
    for (size_t k = minOrder; k < z.freeBlocks.size() && k < 63; ++k)
      bytes += z.freeBlocks[k] * (basePageSize << k);
  }
  return bytes;
}

}  // namespace tierd::sys

#include "tierd/sys/ProcMaps.h"

#include <charconv>
#include <limits>

#include "tierd/sys/Lines.h"
#include "tierd/sys/Parsers.h"

namespace tierd::sys {
namespace {

std::string quote(std::string_view s) {
  constexpr size_t kMax = 100;
  return "'" + (s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s)) + "'";
}

/// Splits off the next blank-separated token of `s` (advancing `s`); "" when none is left.
std::string_view nextToken(std::string_view& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(b);
  size_t e = s.find_first_of(" \t");
  std::string_view tok = s.substr(0, e);
  s = e == std::string_view::npos ? std::string_view{} : s.substr(e);
  return tok;
}

bool parseHex(std::string_view t, uint64_t& out) {
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out, 16);
  return ec == std::errc() && p == t.data() + t.size();
}

bool isHeaderLine(std::string_view line) {
  size_t dash = line.find('-');
  size_t blank = line.find(' ');
  if (dash == std::string_view::npos || dash == 0 || blank == std::string_view::npos ||
      dash > blank)
    return false;
  uint64_t v = 0;
  return parseHex(line.substr(0, dash), v);
}

Result<SmapsVma> parseHeader(std::string_view line, const std::string& where) {
  SmapsVma v;
  std::string_view rest = line;
  std::string_view range = nextToken(rest);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parseHex(range.substr(0, dash), v.start) ||
      !parseHex(range.substr(dash + 1), v.end) || v.end <= v.start)
    return Error::input("bad address range in " + quote(line), where);
  std::string_view perms = nextToken(rest);
  if (perms.size() != 4 || (perms[0] != 'r' && perms[0] != '-') ||
      (perms[1] != 'w' && perms[1] != '-') || (perms[2] != 'x' && perms[2] != '-') ||
      (perms[3] != 'p' && perms[3] != 's'))
    return Error::input("bad permissions in " + quote(line), where);
  v.perms = std::string(perms);
  if (!parseHex(nextToken(rest), v.offset))
    return Error::input("bad offset in " + quote(line), where);
  std::string_view dev = nextToken(rest);
  uint64_t major = 0;
  uint64_t minor = 0;
  size_t colon = dev.find(':');
  if (colon == std::string_view::npos || !parseHex(dev.substr(0, colon), major) ||
      !parseHex(dev.substr(colon + 1), minor))
    return Error::input("bad device in " + quote(line), where);
  v.dev = std::string(dev);
  std::string_view inode = nextToken(rest);
  auto ino = parseU64(inode, where);
  if (!ino) return Error::input("bad inode in " + quote(line), where);
  v.inode = ino.value();
  size_t b = rest.find_first_not_of(" \t");
  v.path = b == std::string_view::npos ? std::string() : std::string(trimRight(rest.substr(b)));
  return v;
}

Status parseSmapsField(SmapsVma& v, std::string_view line, const std::string& where) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return Error::input("expected 'Key: value', got " + quote(line), where);
  std::string key(line.substr(0, colon));
  std::string_view rest = line.substr(colon + 1);
  if (key == "VmFlags") {
    for (std::string_view f = nextToken(rest); !f.empty(); f = nextToken(rest)) {
      if (f.size() != 2) return Error::input("bad VmFlags entry " + quote(f), where);
      v.vmFlags.insert(std::string(f));
    }
    return Ok{};
  }
  std::string_view num = nextToken(rest);
  std::string_view unit = nextToken(rest);
  if (!nextToken(rest).empty())
    return Error::input("expected 'Key: value [kB]', got " + quote(line), where);
  auto n = parseU64(num, where);
  if (!n) return Error::input("expected 'Key: value [kB]', got " + quote(line), where);
  uint64_t value = n.value();
  if (!unit.empty()) {
    if (unit != "kB") return Error::input("unknown unit in " + quote(line), where);
    if (value > std::numeric_limits<uint64_t>::max() / 1024)
      return Error::input("value out of range in " + quote(line), where);
    value *= 1024;
  }
  if (key == "THPeligible") {
    if (value > 1) return Error::input("THPeligible must be 0 or 1: " + quote(line), where);
    v.thpEligible = value == 1;
  }
  if (v.fields.count(key)) return Error::input("repeated key " + quote(key), where);
  v.fields[key] = value;
  return Ok{};
}

Status finishSmapsVma(SmapsVma& v, const std::string& where) {
  auto get = [&](const char* k) -> uint64_t {
    auto it = v.fields.find(k);
    return it == v.fields.end() ? 0 : it->second;
  };
  if (!v.fields.count("KernelPageSize") || get("KernelPageSize") == 0)
    return Error::input("VMA " + std::to_string(v.start) + " has no KernelPageSize", where);
  v.kernelPageSize = get("KernelPageSize");
  v.mmuPageSize = get("MMUPageSize");
  v.rss = get("Rss");
  v.anonHugePages = get("AnonHugePages");
  if (v.fields.count("Size") && get("Size") != v.size())
    return Error::input("Size does not match the VMA's address range", where);
  return Ok{};
}

}  // namespace

uint64_t NumaMapsVma::presentPages() const {
  uint64_t n = 0;
  for (const auto& [node, pages] : pagesPerNode)
    n += pages;
  return n;
}

Result<std::vector<SmapsVma>> parseMaps(std::string_view text, const std::string& context) {
  std::vector<SmapsVma> out;
  Status s = forEachLine(text, context, [&](std::string_view line, const std::string& where) {
    auto v = parseHeader(line, where);
    if (!v) return Status(v.error());
    if (!out.empty() && v->start < out.back().end)
      return Status(Error::input("VMAs not in ascending order at " + quote(line), where));
    out.push_back(std::move(v.value()));
    return Status(Ok{});
  });
  if (!s) return s.error();
  return out;
}

Result<std::vector<SmapsVma>> parseSmaps(std::string_view text, const std::string& context) {
  std::vector<SmapsVma> out;
  std::string lastWhere = context;
  Status s = forEachLine(text, context, [&](std::string_view line, const std::string& where) {
    if (isHeaderLine(line)) {
      if (!out.empty()) {
        Status f = finishSmapsVma(out.back(), lastWhere);
        if (!f) return f;
      }
      auto v = parseHeader(line, where);
      if (!v) return Status(v.error());
      if (!out.empty() && v->start < out.back().end)
        return Status(Error::input("VMAs not in ascending order at " + quote(line), where));
      v->hasCounters = true;
      out.push_back(std::move(v.value()));
      lastWhere = where;
      return Status(Ok{});
    }
    if (out.empty())
      return Status(Error::input("field line before the first VMA: " + quote(line), where));
    return parseSmapsField(out.back(), line, where);
  });
  if (!s) return s.error();
  if (!out.empty()) {
    Status f = finishSmapsVma(out.back(), lastWhere);
    if (!f) return f.error();
  }
  return out;
}

Result<std::vector<NumaMapsVma>> parseNumaMaps(std::string_view text, const std::string& context) {
  std::vector<NumaMapsVma> out;
  Status s = forEachLine(text, context, [&](std::string_view line, const std::string& where) {
    NumaMapsVma v;
    std::string_view rest = line;
    if (!parseHex(nextToken(rest), v.start))
      return Status(Error::input("expected a hex start address in " + quote(line), where));
    // The policy is one word except "prefer (many)" and "weighted interleave" (mempolicy.c
    // policy_modes), optionally followed by "=flags" and ":nodelist" without blanks.
    std::string_view pol = nextToken(rest);
    if (pol.empty()) return Status(Error::input("missing policy in " + quote(line), where));
    std::string policy(pol);
    if (pol == "prefer" || pol == "weighted") {
      std::string_view save = rest;
      std::string_view second = nextToken(rest);
      if ((pol == "prefer" && second.substr(0, 6) == "(many)") ||
          (pol == "weighted" && second.substr(0, 10) == "interleave"))
        policy += " " + std::string(second);
      else
        rest = save;
    }
    static const char* kModes[] = {
        "default", "prefer", "bind", "interleave", "local", "prefer (many)", "weighted interleave"};
    bool known = false;
    for (const char* m : kModes) {
      std::string_view mode(m);
      if (policy.compare(0, mode.size(), mode) == 0 &&
          (policy.size() == mode.size() || policy[mode.size()] == ':' ||
           policy[mode.size()] == '='))
        known = true;
    }
    if (!known) return Status(Error::input("unknown policy " + quote(policy), where));
    v.policy = policy;
    for (std::string_view tok = nextToken(rest); !tok.empty(); tok = nextToken(rest)) {
      size_t eq = tok.find('=');
      if (eq == std::string_view::npos) {
        if (tok == "huge")
          v.huge = true;
        else if (tok == "heap")
          v.heap = true;
        else if (tok == "stack")
          v.stack = true;
        else
          return Status(Error::input("unknown field " + quote(tok), where));
        continue;
      }
      std::string_view key = tok.substr(0, eq);
      std::string_view val = tok.substr(eq + 1);
      if (key == "file") {
        if (val.empty()) return Status(Error::input("empty file= in " + quote(line), where));
        v.file = std::string(val);
        continue;
      }
      auto n = parseU64(val, where);
      if (!n) return Status(Error::input("bad value in " + quote(tok), where));
      if (key.size() >= 2 && key[0] == 'N') {
        auto node = parseU64(key.substr(1), where);
        if (!node || node.value() > 1 << 20)
          return Status(Error::input("bad node in " + quote(tok), where));
        v.pagesPerNode[static_cast<int>(node.value())] = n.value();
      } else if (key == "kernelpagesize_kB") {
        if (n.value() == 0) return Status(Error::input("zero page size in " + quote(tok), where));
        v.kernelPageSize = n.value() * 1024;
      } else {
        v.counts[std::string(key)] = n.value();
      }
    }
    if (!out.empty() && v.start <= out.back().start)
      return Status(Error::input("VMAs not in ascending order at " + quote(line), where));
    out.push_back(std::move(v));
    return Status(Ok{});
  });
  if (!s) return s.error();
  return out;
}

namespace {
template <typename T>
Result<T> readAndParse(const SysRoot& root, pid_t pid, const char* file,
                       Result<T> (*parse)(std::string_view, const std::string&)) {
  const std::string abs = "/proc/" + std::to_string(pid) + "/" + file;
  auto text = root.read(abs);
  if (!text) return text.error();
  return parse(text.value(), root.path(abs));
}
}  // namespace

Result<std::vector<SmapsVma>> readMaps(const SysRoot& root, pid_t pid) {
  return readAndParse(root, pid, "maps", &parseMaps);
}
Result<std::vector<SmapsVma>> readSmaps(const SysRoot& root, pid_t pid) {
  return readAndParse(root, pid, "smaps", &parseSmaps);
}
Result<std::vector<NumaMapsVma>> readNumaMaps(const SysRoot& root, pid_t pid) {
  return readAndParse(root, pid, "numa_maps", &parseNumaMaps);
}

namespace {
// The id list on the `key` line of /proc/PID/status text.
Result<std::set<int>> statusList(std::string_view text, std::string_view key,
                                 const std::string& context) {
  size_t lineNo = 0;
  while (!text.empty()) {
    const std::string_view line = takeLine(text);
    ++lineNo;
    if (line.substr(0, key.size()) != key) continue;
    std::string_view list = line.substr(key.size());
    while (!list.empty() && (list.front() == ' ' || list.front() == '\t'))
      list.remove_prefix(1);
    return parseIdList(list, context + ":" + std::to_string(lineNo));
  }
  return Error::input("no " + std::string(key.substr(0, key.size() - 1)) + " line", context);
}
}  // namespace

Result<std::set<int>> parseMemsAllowed(std::string_view text, const std::string& context) {
  return statusList(text, "Mems_allowed_list:", context);
}

Result<std::set<int>> parseCpusAllowed(std::string_view text, const std::string& context) {
  return statusList(text, "Cpus_allowed_list:", context);
}

Result<AllowedLists> parseAllowedLists(std::string_view text, const std::string& context) {
  auto cpus = parseCpusAllowed(text, context);
  if (!cpus) return cpus.error();
  auto mems = parseMemsAllowed(text, context);
  if (!mems) return mems.error();
  return AllowedLists{std::move(cpus.value()), std::move(mems.value())};
}

Result<AllowedLists> readAllowedLists(const SysRoot& root, pid_t pid) {
  return readAndParse(root, pid, "status", &parseAllowedLists);
}

Result<std::set<int>> readMemsAllowed(const SysRoot& root, pid_t pid) {
  return readAndParse(root, pid, "status", &parseMemsAllowed);
}

}  // namespace tierd::sys

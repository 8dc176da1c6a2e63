#include "policy/ConfigCompiler.h"

#include <arpa/inet.h>
#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "policy/ConfigSchema.h"
#include "policy/ConfigUnits.h"
#include "policy/TomlShape.h"
#include "tierd/core/FileSafety.h"
#include "tierd/core/Numbers.h"

namespace tierd::policy {

std::string ConfigError::describe() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!keyPath.empty()) out += keyPath + ": ";
  return out + message;
}

Error CompileOutcome::toError() const {
  std::string msg;
  for (const ConfigError& e : errors)
    msg += (msg.empty() ? "" : "\n") + e.describe();
  return Error::input(msg.empty() ? "no config" : msg, "");
}

namespace {

struct Pos {
  int line = 0;
  int column = 0;
};

Pos posOf(const toml::source_region& r) {
  return {static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

// One parsed key with where it was written.
struct Parsed {
  const KeySpec* spec = nullptr;
  std::string file;
  Pos pos;
  std::string keyPath;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<int64_t> list;
  ByteAmount amount;
  uint64_t ns = 0;
};
using Values = std::map<std::string, Parsed>;  // by KeySpec::key

const char* typeName(toml::node_type t) {
  switch (t) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(15);
  o << v;
  return o.str();
}

// "did you mean" among `candidates`, or "".
std::string suggest(const std::string& word, const std::vector<std::string>& candidates) {
  size_t best = SIZE_MAX;
  std::string bestWord;
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  for (const std::string& c : candidates) {
    // A length difference above the limit is a distance above it: skipping those keeps a
    // megabyte-long key from costing an edit distance against every candidate.
    if (std::max(word.size(), c.size()) - std::min(word.size(), c.size()) > limit) continue;
    size_t d = editDistance(word, c);
    if (d < best) best = d, bestWord = c;
  }
  return best <= limit ? " (did you mean '" + bestWord + "'?)" : "";
}

bool validName(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return false;
  return true;
}

std::string checkAddress(const std::string& s) {
  if (s.empty()) return "";
  std::string host, port;
  if (s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':')
      return "expected \"[ipv6]:port\"";
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    if (host.empty()) return "empty IPv6 address";
    for (char c : host)
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.')
        return "invalid IPv6 address '" + host + "'";
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos) return "expected \"host:port\", got no port";
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.empty()) return "empty host (use \"0.0.0.0:PORT\" for all addresses)";
    for (char c : host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-')
        return "invalid host '" + host + "'";
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
      !parseU64InRange(port, 0, 65535, "port").ok())
    return "invalid port '" + port + "' (0 .. 65535)";
  return "";
}

std::string checkCgroupPath(const std::string& s) {
  if (s.empty() || s[0] != '/') return "cgroup path must start with '/'";
  if (s.size() > 4096) return "cgroup path longer than 4096 bytes";
  if (s.size() > 1 && s.back() == '/') return "cgroup path must not end with '/'";
  std::stringstream ss(s.substr(1));
  std::string part;
  while (s.size() > 1 && std::getline(ss, part, '/'))
    if (part.empty() || part == "." || part == "..")
      return "cgroup path has an empty, '.' or '..' component";
  return "";
}

// "" when `s` (a path or command) holds no NUL or other control character (C0, DEL, or C1 as
// UTF-8), else where the first one is: such a byte cuts a path short at the kernel or hides in a
// log line.
std::string checkNoControl(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool c1 = c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%02x", c1 ? static_cast<unsigned char>(s[i + 1]) : c);
      return std::string("contains a control character (") + (c1 ? "U+00" : "0x") + hex +
             " at byte " + std::to_string(i) + "); paths and commands may not";
    }
  }
  return "";
}

// "" when `s` is a valid workload `command` (an absolute path or a file name, matched against
// /proc/PID/exe), else why not.
std::string checkCommand(const std::string& s) {
  const bool absolute = !s.empty() && s[0] == '/';
  if (s.empty() || (!absolute && s.find('/') != std::string::npos))
    return "'" + s +
           "' is neither an absolute path nor a file name (matched against /proc/PID/exe)";
  if (s.size() > (absolute ? 4095u : 255u))
    return std::string(absolute ? "paths are at most 4095 bytes"
                                : "file names are at most 255 bytes") +
           ", got " + std::to_string(s.size());
  return "";
}

class Compiler {
 public:
  std::vector<ConfigError> errors;
  std::optional<uid_t> trustedUid;  // CompileOptions::trustedUid

  void error(const std::string& file, Pos p, const std::string& keyPath, std::string msg) {
    errors.push_back({file, p.line, p.column, keyPath, std::move(msg)});
  }

  // Where one value stands, and how its errors are said: at the value's position, under its key.
  struct Site {
    Compiler& compiler;
    const KeySpec& spec;
    const toml::node& n;
    const std::string& file;
    const std::string& path;

    bool bad(const std::string& msg) const {
      compiler.error(file, posOf(n.source()), path, msg);
      return false;
    }
    bool wrongType(const std::string& expected) const {
      return bad("expected " + expected + ", got " + typeName(n.type()));
    }
    bool range(double v, const std::string& shown) const {
      if (v < spec.min || v > spec.max)
        return bad(shown + " is out of range " + num(spec.min) + " .. " + num(spec.max));
      return true;
    }
  };

  // Parses one value of `spec` (msForm: the integer-milliseconds variant of a Duration).
  bool parseValue(const KeySpec& spec, bool msForm, const toml::node& n, const std::string& file,
                  const std::string& path, Parsed& out) {
    out.spec = &spec;
    out.file = file;
    out.pos = posOf(n.source());
    out.keyPath = path;
    const Site at{*this, spec, n, file, path};
    switch (spec.type) {
      case ValueType::Bool:
        if (!n.is_boolean()) return at.wrongType("a boolean (true or false)");
        out.b = n.as_boolean()->get();
        return true;
      case ValueType::Integer:
        if (!n.is_integer()) return at.wrongType("an integer");
        out.i = n.as_integer()->get();
        return at.range(static_cast<double>(out.i), std::to_string(out.i));
      case ValueType::Number:
        if (n.is_integer()) {
          out.d = static_cast<double>(n.as_integer()->get());
        } else if (n.is_floating_point()) {
          out.d = n.as_floating_point()->get();
          if (!std::isfinite(out.d)) return at.bad("must be a finite number");
        } else {
          return at.wrongType("a number");
        }
        return at.range(out.d, num(out.d));
      case ValueType::Duration:
        return parseDurationValue(at, msForm, out);
      case ValueType::BytesOrPercent:
        return parseAmount(at, out);
      case ValueType::NodeList:
      case ValueType::PidList:
        return parseIdList(at, out);
      default:
        return parseStringValue(at, out);
    }
  }

  // A Duration: a string like "500ms", or (msForm) an integer of milliseconds; within the range.
  bool parseDurationValue(const Site& at, bool msForm, Parsed& out) {
    const toml::node& n = at.n;
    uint64_t ns = 0;
    if (msForm) {
      if (!n.is_integer()) return at.wrongType("an integer of milliseconds");
      int64_t ms = n.as_integer()->get();
      if (ms < 0) return at.bad("must not be negative");
      if (static_cast<uint64_t>(ms) > kMaxDurationNs / 1000000) return at.bad("too large");
      ns = static_cast<uint64_t>(ms) * 1000000;
    } else {
      if (!n.is_string())
        return at.bad(std::string("expected a duration string like \"500ms\", got ") +
                      typeName(n.type()) + " (for an integer of milliseconds write " + at.spec.key +
                      "_ms)");
      auto v = parseDuration(n.as_string()->get());
      if (!v) return at.bad(v.error().message);
      ns = *v;
    }
    out.ns = ns;
    if (static_cast<double>(ns) < at.spec.min || static_cast<double>(ns) > at.spec.max)
      return at.bad(formatDuration(ns) + " is out of range " +
                    formatDuration(static_cast<uint64_t>(at.spec.min)) + " .. " +
                    formatDuration(static_cast<uint64_t>(at.spec.max)));
    return true;
  }

  // A BytesOrPercent: a percentage like "25%" within the range, or a byte size like "8GiB".
  bool parseAmount(const Site& at, Parsed& out) {
    if (!at.n.is_string()) return at.wrongType("a string like \"8GiB\" or \"25%\"");
    const std::string& s = at.n.as_string()->get();
    if (!s.empty() && s.back() == '%') {
      auto v = parsePercent(s);
      if (!v) return at.bad(v.error().message);
      out.amount = {true, 0, *v};
      if (*v < at.spec.min || *v > at.spec.max)
        return at.bad(formatPercent(*v) + " is out of range " + formatPercent(at.spec.min) +
                      " .. " + formatPercent(at.spec.max));
      return true;
    }
    auto v = parseByteSize(s, kMaxConfigBytes);
    if (!v) {
      const std::string& why = v.error().message;
      const bool tooLarge = why.find("too large") != std::string::npos;
      return at.bad(tooLarge ? why : why + ", or a percentage like \"25%\"");
    }
    out.amount = {false, *v, 0};
    return true;
  }

  // A NodeList or PidList: a non-empty array of distinct integers within the range; each bad
  // element is an error of its own, at the element.
  bool parseIdList(const Site& at, Parsed& out) {
    if (!at.n.is_array()) return at.wrongType("an array of integers");
    bool ok = true;
    const toml::array& arr = *at.n.as_array();
    if (arr.size() > kMaxPids)
      return at.bad(std::to_string(arr.size()) + " entries; at most " + std::to_string(kMaxPids));
    std::set<int64_t> listed;
    for (size_t i = 0; i < arr.size(); ++i) {
      const toml::node& e = arr[i];
      std::string ep = at.path + "[" + std::to_string(i) + "]";
      if (!e.is_integer()) {
        error(at.file, posOf(e.source()), ep,
              std::string("expected an integer, got ") + typeName(e.type()));
        ok = false;
        continue;
      }
      int64_t v = e.as_integer()->get();
      if (static_cast<double>(v) < at.spec.min || static_cast<double>(v) > at.spec.max) {
        error(
            at.file, posOf(e.source()), ep,
            std::to_string(v) + " is out of range " + num(at.spec.min) + " .. " + num(at.spec.max));
        ok = false;
      } else if (!listed.insert(v).second) {
        error(at.file, posOf(e.source()), ep, std::to_string(v) + " is listed twice");
        ok = false;
      } else {
        out.list.push_back(v);
      }
    }
    if (ok && arr.empty()) return at.bad("must not be empty");
    return ok;
  }

  // The string-valued types: Enum, Address, CgroupPath, Name, Path and String.
  bool parseStringValue(const Site& at, Parsed& out) {
    if (!at.n.is_string()) return at.wrongType("a string");
    out.s = at.n.as_string()->get();
    const bool namesFile = at.spec.type == ValueType::Path ||
                           at.spec.type == ValueType::CgroupPath ||
                           std::string(at.spec.key) == "command";
    if (namesFile)
      if (std::string why = checkNoControl(out.s); !why.empty()) return at.bad(why);
    std::string msg;
    switch (at.spec.type) {
      case ValueType::Enum: {
        std::vector<std::string> choices;
        std::stringstream ss(at.spec.choices);
        std::string c;
        while (std::getline(ss, c, '|'))
          choices.push_back(c);
        if (std::find(choices.begin(), choices.end(), out.s) == choices.end())
          msg = "'" + out.s + "' is not one of " + std::string(at.spec.choices) +
                suggest(out.s, choices);
        break;
      }
      case ValueType::Address:
        msg = checkAddress(out.s);
        break;
      case ValueType::CgroupPath:
        msg = checkCgroupPath(out.s);
        break;
      case ValueType::Name:
        if (!validName(out.s))
          msg = "'" + out.s +
                "' is not a valid name ([A-Za-z0-9_.-], 1 .. 64 characters, not starting "
                "with '.')";
        break;
      case ValueType::Path:
        if (out.s.empty()) msg = "must not be empty";
        break;
      case ValueType::String:
        if (std::string(at.spec.key) == "command") msg = checkCommand(out.s);
        break;
      default:
        msg = "internal: unhandled type";
    }
    return msg.empty() ? true : at.bad(msg);
  }

  // Keys earlier versions read and this one does not, with what replaced them: a config written
  // for an older tierd gets that instead of "unknown key". nullptr for any other path.
  static const char* retiredKeyReason(const std::string& path) {
    static const std::pair<const char*, const char*> kRetired[] = {
        {"sampling.damon_read",
         "tierd reads DAMON through the damon_aggregated tracepoint where tracefs offers it and "
         "through tried regions otherwise; delete the line"},
        {"sampling.kdamond_nice",
         "tierd leaves its kdamonds at the kernel's priority (cpu_budget_percent bounds their "
         "CPU); delete the line"},
        {"sampling.damon_max_regions",
         "each kdamond keeps DAMON's own bound of 1000 regions; delete the line"},
    };
    for (const auto& [key, why] : kRetired)
      if (path == key) return why;
    return nullptr;
  }

  // Parses every key of `tbl` against `specs` into `out`; unknown keys are errors.
  // `seen` (optional) receives every known key present, valid or not.
  void parseTable(const toml::table& tbl, const std::string& file, const std::string& prefix,
                  const std::vector<const KeySpec*>& specs, Values& out,
                  std::set<std::string>* seen = nullptr) {
    std::vector<std::string> names;
    for (const KeySpec* s : specs) {
      names.push_back(s->key);
      if (s->type == ValueType::Duration) names.push_back(std::string(s->key) + "_ms");
    }
    for (auto&& [k, node] : tbl) {
      std::string key(k.str());
      std::string path = prefix + key;
      const KeySpec* spec = nullptr;
      bool msForm = false;
      for (const KeySpec* s : specs) {
        if (key == s->key) spec = s;
        if (s->type == ValueType::Duration && key == std::string(s->key) + "_ms")
          spec = s, msForm = true;
      }
      if (!spec) {
        if (const char* why = retiredKeyReason(path))
          error(file, posOf(k.source()), path, std::string("no longer a key: ") + why);
        else
          error(file, posOf(k.source()), path, "unknown key" + suggest(key, names));
        continue;
      }
      if (seen) seen->insert(spec->key);
      if (auto it = out.find(spec->key); it != out.end()) {
        error(file, posOf(k.source()), path,
              "set either " + std::string(spec->key) + " or " + spec->key +
                  "_ms, not both (the other is at line " + std::to_string(it->second.pos.line) +
                  ")");
        continue;
      }
      Parsed p;
      if (parseValue(*spec, msForm, node, file, path, p)) out[spec->key] = std::move(p);
    }
  }

  // Fills keys absent from `out` with the schema defaults.
  void applyDefaults(const std::vector<const KeySpec*>& specs, Values& out) {
    for (const KeySpec* s : specs) {
      if (out.count(s->key) || !*s->defaultText) continue;
      toml::table t;
      try {
        t = toml::parse(std::string_view(std::string("v = ") + s->defaultText),
                        std::string_view("<schema>"));
      } catch (const toml::parse_error& e) {
        error("<schema>", {}, s->key, "internal: bad default: " + std::string(e.description()));
        continue;
      }
      Parsed p;
      if (parseValue(*s, false, *t.get("v"), "<schema>", s->key, p)) {
        p.pos = {};
        out[s->key] = std::move(p);
      }
    }
  }

  // Parses a whole file; nullopt after a syntax error or a broken limit (already reported). The
  // size and shape limits (ConfigSchema.h) are checked before toml++ sees the text, which it
  // could not survive otherwise (TomlShape.h).
  std::optional<toml::table> parseText(std::string_view text, const std::string& file) {
    if (text.size() > kMaxConfigFileBytes) {
      error(file, {}, "",
            "larger than " + std::to_string(kMaxConfigFileBytes) +
                " bytes, tierd's limit for a config or profile file");
      return std::nullopt;
    }
    if (auto problem = checkTomlShape(text)) {
      error(file, {problem->line, problem->column}, "", problem->message);
      return std::nullopt;
    }
    try {
      return toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      std::string msg;
      for (char ch : e.description()) {
        if (ch == '\n')
          msg += "\\n";
        else if (static_cast<unsigned char>(ch) < 0x20)
          msg += '?';
        else
          msg += ch;
      }
      error(file, posOf(e.source()), "", msg);
      return std::nullopt;
    }
  }

  // Reads `file` with tierd::readConfigFile: a regular file of at most kMaxConfigFileBytes, and
  // the owner and mode rules when trustedUid is set. A problem is reported against the file
  // itself (refFile empty: the main file, line 0) or where it was named (a profile).
  std::optional<std::string> readFile(const std::string& file, const std::string& refFile,
                                      Pos refPos, const std::string& refKey) {
    auto text = readConfigFile(file, trustedUid, kMaxConfigFileBytes);
    if (text) return std::move(text.value());
    const Error& e = text.error();
    // A refusal (not a regular file, too large, unsafe) or a failed call (with its errno).
    std::string why = e.code ? std::string("cannot read: ") + std::strerror(e.code)
                      : e.message.rfind("refusing", 0) == 0
                          ? e.message
                          : "refusing the config file: " + e.message;
    if (refFile.empty())
      error(file, {}, "", why);
    else
      error(refFile, refPos, refKey,
            (e.code ? "cannot read " : "refusing profile ") + file + ": " +
                (e.code ? std::strerror(e.code) : e.message));
    return std::nullopt;
  }

  // Loads profile `name` (cached). nullopt when missing or broken (errors reported once).
  const Values* profile(const std::string& name, const std::vector<std::string>& dirs,
                        const Parsed& ref, std::string& foundPath) {
    if (auto it = profiles_.find(name); it != profiles_.end()) {
      foundPath = it->second.first;
      return it->second.second ? &*it->second.second : nullptr;
    }
    if (profiles_.size() >= kMaxProfiles) {  // each read is up to kMaxConfigFileBytes
      profiles_[name];                       // said once per name
      error(ref.file, ref.pos, ref.keyPath,
            "profile '" + name + "': more than " + std::to_string(kMaxProfiles) +
                " distinct profiles in one config");
      return nullptr;
    }
    auto& slot = profiles_[name];
    std::string tried;
    for (const std::string& d : dirs) {
      std::string p = (std::filesystem::path(d) / (name + ".toml")).string();
      tried += (tried.empty() ? "" : ", ") + p;
      std::error_code ec;
      if (!std::filesystem::exists(p, ec)) continue;
      slot.first = foundPath = p;
      auto text = readFile(p, ref.file, ref.pos, ref.keyPath);
      if (!text) return nullptr;
      auto tbl = parseText(*text, p);
      if (!tbl) return nullptr;
      std::vector<const KeySpec*> specs;
      for (const KeySpec& k : configSchema())
        if (k.inProfile) specs.push_back(&k);
      Values v;
      size_t before = errors.size();
      parseTable(*tbl, p, "", specs, v);
      if (errors.size() != before) return nullptr;
      slot.second = std::move(v);
      return &*slot.second;
    }
    error(ref.file, ref.pos, ref.keyPath,
          "profile '" + name + "' not found (looked for " + tried + ")");
    return nullptr;
  }

 private:
  std::map<std::string, std::pair<std::string, std::optional<Values>>> profiles_;
};

WorkloadPolicy policyFrom(const Values& v) {
  WorkloadPolicy p;
  p.fastQuota = v.at("fast_quota").amount;
  p.hotThreshold = v.at("hot_threshold").d;
  p.hotRatio = v.at("hot_ratio").d;
  p.fillHeadroom = v.at("fill_headroom").amount;
  p.coldThreshold = v.at("cold_threshold").d;
  p.heatHalfLifeNs = v.at("heat_half_life").ns;
  p.cooldownNs = v.at("cooldown").ns;
  return p;
}

// One [[workload]] entry as read: its values, the keys it set, where it starts.
struct WorkloadIn {
  Values values;
  std::set<std::string> seen;
  Pos pos;
  std::string prefix;
};

// The file's sections as read against the schema: [daemon], [tiers], [sampling], [migration]
// (defaults filled in) and the [[workload]] entries.
struct SectionsIn {
  std::map<std::string, Values> sections;
  std::vector<WorkloadIn> workloads;
};

// Reads the top-level keys of `root`: unknown sections and sections of the wrong shape are
// errors.
SectionsIn readSections(Compiler& c, const toml::table& root, const std::string& path) {
  const std::vector<std::string> kSections = {"daemon", "tiers", "sampling", "migration",
                                              "workload"};
  SectionsIn in;
  for (auto&& [k, node] : root) {
    std::string key(k.str());
    if (std::find(kSections.begin(), kSections.end(), key) == kSections.end()) {
      c.error(path, posOf(k.source()), key, "unknown section" + suggest(key, kSections));
      continue;
    }
    if (key == "workload") {
      const toml::array* arr = node.as_array();
      if (!arr || (!arr->empty() && !arr->is_array_of_tables())) {
        c.error(path, posOf(node.source()), key,
                std::string("expected [[workload]] entries (an array of tables), got ") +
                    typeName(node.type()));
        continue;
      }
      if (arr->size() > kMaxWorkloads) {  // the entries are not read: a reload stays bounded
        c.error(path, posOf(node.source()), key,
                std::to_string(arr->size()) + " [[workload]] entries; at most " +
                    std::to_string(kMaxWorkloads));
        continue;
      }
      for (size_t i = 0; i < arr->size(); ++i) {
        WorkloadIn w;
        w.prefix = "workload[" + std::to_string(i) + "]";
        w.pos = posOf((*arr)[i].source());
        c.parseTable(*(*arr)[i].as_table(), path, w.prefix + ".", sectionKeys("workload"), w.values,
                     &w.seen);
        in.workloads.push_back(std::move(w));
      }
      continue;
    }
    if (!node.is_table()) {
      c.error(path, posOf(node.source()), key,
              std::string("expected a table [") + key + "], got " + typeName(node.type()));
      continue;
    }
    c.parseTable(*node.as_table(), path, key + ".", sectionKeys(key), in.sections[key]);
  }
  for (const char* s : {"daemon", "tiers", "sampling", "migration"})
    c.applyDefaults(sectionKeys(s), in.sections[s]);
  return in;
}

// True when `address` ("host:port" or "[v6]:port", as checkAddress accepts) listens on loopback
// only: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104 or the name localhost.
bool isLoopbackListen(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, host.c_str(), &a6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  return host == "localhost";
}

// [daemon]; a relative metrics_basic_auth_file is relative to the config file's directory.
void compileDaemon(Compiler& c, Values& d, const std::string& path, DaemonConfig& out) {
  out.intervalNs = d["interval"].ns;
  out.metricsListen = d["metrics_listen"].s;
  out.dryRun = d["dry_run"].b;
  out.controlSocket = d["control_socket"].s;
  out.metricsUser = d["metrics_user"].s;
  if (out.metricsUser.empty() || out.metricsUser == "root")
    c.error(path, d["metrics_user"].pos, "daemon.metrics_user",
            "must name an unprivileged user (the exporter never runs as root)");
  else if (const std::string bad = checkNoControl(out.metricsUser); !bad.empty())
    c.error(path, d["metrics_user"].pos, "daemon.metrics_user", bad);
  if (!out.controlSocket.empty() &&
      (out.controlSocket.front() != '/' || out.controlSocket.size() > 107))
    c.error(path, d["control_socket"].pos, "daemon.control_socket",
            "must be an absolute path of at most 107 bytes (sun_path), or \"\" for none");
  out.logLevel = d["log_level"].s;
  out.progressIntervalNs = d["progress_interval"].ns;
  out.fullLocateIntervalNs = d["full_locate_interval"].ns;
  out.settledIntervalNs = d["settled_interval"].ns;
  if (out.settledIntervalNs != 0 && out.settledIntervalNs < out.intervalNs)
    c.error(path, d["settled_interval"].pos, "daemon.settled_interval",
            "shorter than daemon.interval (" + formatDuration(out.intervalNs) +
                "): a settled tick is never more frequent; \"0s\" ticks at interval always");
  if (d.count("metrics_basic_auth_file")) {
    std::filesystem::path auth = d["metrics_basic_auth_file"].s;
    if (auth.is_relative()) auth = std::filesystem::path(path).parent_path() / auth;
    out.metricsBasicAuthFile = auth.lexically_normal();
    if (out.metricsListen.empty())
      c.error(path, d["metrics_basic_auth_file"].pos, "daemon.metrics_basic_auth_file",
              "the metrics exporter is off (metrics_listen = \"\"): nothing to protect");
  }
  out.metricsAllowUnauthenticatedRemote = d["metrics_allow_unauthenticated_remote"].b;
  if (!out.metricsListen.empty() && out.metricsBasicAuthFile.empty() &&
      !out.metricsAllowUnauthenticatedRemote && !isLoopbackListen(out.metricsListen))
    c.error(path, d["metrics_listen"].pos, "daemon.metrics_listen",
            "'" + out.metricsListen +
                "' is not a loopback address and metrics_basic_auth_file is not set: anyone who "
                "reaches the port reads the metrics; set metrics_basic_auth_file, or "
                "metrics_allow_unauthenticated_remote = true where a firewall limits who reaches "
                "it");
}

// [tiers]: no node in both lists.
void compileTiers(Compiler& c, Values& t, const std::string& path, TiersConfig& out) {
  for (int64_t n : t["fast_nodes"].list)
    out.fastNodes.insert(static_cast<int>(n));
  for (int64_t n : t["slow_nodes"].list) {
    if (out.fastNodes.count(static_cast<int>(n)))
      c.error(path, t["slow_nodes"].pos, "tiers.slow_nodes",
              "node " + std::to_string(n) + " is also in fast_nodes");
    out.slowNodes.insert(static_cast<int>(n));
  }
}

// [sampling]: trace goes with source = "replay" and only with it (checked by
// CompileOptions::checkTrace when set); a relative trace is relative to the config file.
void compileSampling(Compiler& c, Values& s, const std::string& path, const CompileOptions& options,
                     const DaemonConfig& daemon, SamplingConfig& out) {
  const std::string& src = s["source"].s;
  out.source = src == "perf"                  ? SampleSource::Perf
               : src == "damon"               ? SampleSource::Damon
               : src == "replay"              ? SampleSource::Replay
               : src == "perf-sw-page-faults" ? SampleSource::PerfSwPageFaults
                                              : SampleSource::Auto;
  out.cpuBudgetPercent = s["cpu_budget_percent"].d;
  out.samplePeriod = static_cast<uint64_t>(s["sample_period"].i);
  out.damonMaxProcesses = static_cast<int>(s["damon_max_processes"].i);
  out.disableDamonStat = s["damon_stat"].s == "disable";
  out.maxSampleIntervalNs = s["max_sample_interval"].ns;
  out.settledCpuBudgetPercent = s["settled_cpu_budget_percent"].d;
  out.settleTricklePercent = s["settle_trickle_percent"].d;
  out.settledDamonWindowNs = s["settled_damon_window"].ns;
  if (out.settledDamonWindowNs != 0 && daemon.settledIntervalNs == 0)
    c.error(path, s["settled_damon_window"].pos, "sampling.settled_damon_window",
            "daemon.settled_interval is off: DAMON pauses only during a settled wait");
  else if (out.settledDamonWindowNs != 0 && out.settledDamonWindowNs >= daemon.settledIntervalNs)
    c.error(path, s["settled_damon_window"].pos, "sampling.settled_damon_window",
            "not shorter than daemon.settled_interval (" +
                formatDuration(daemon.settledIntervalNs) + "): DAMON would never pause");
  if (s.count("trace")) {
    out.trace = s["trace"].s;
    if (std::filesystem::path(out.trace).is_relative())  // relative to the config file
      out.trace = (std::filesystem::path(path).parent_path() / out.trace).lexically_normal();
    if (out.source != SampleSource::Replay)
      c.error(path, s["trace"].pos, "sampling.trace", "only used with source = \"replay\"");
    else if (options.checkTrace)
      if (std::string why = options.checkTrace(out.trace); !why.empty())
        c.error(path, s["trace"].pos, "sampling.trace", why);
  } else if (out.source == SampleSource::Replay) {
    c.error(path, s["source"].pos, "sampling.source", "source = \"replay\" needs sampling.trace");
  }
}

// [migration].
void compileMigration(Values& m, MigrationConfig& out) {
  out.pageGranularity =
      m["page_granularity"].s == "base" ? PageGranularity::Base : PageGranularity::Huge;
  out.maxPromoteMiBPerS = static_cast<uint64_t>(m["max_promote_mib_per_s"].i);
  out.maxDemoteMiBPerS = static_cast<uint64_t>(m["max_demote_mib_per_s"].i);
  out.callLatencyTargetNs = m["call_latency_target"].ns;
  out.fastHeadroom = m["fast_headroom"].amount;
  out.allowKernelTiering = m["allow_kernel_tiering"].b;
}

// Names, cgroups, pids and commands already taken, each by the index of its workload.
struct TakenSelectors {
  std::map<std::string, size_t> names;
  std::map<std::string, size_t> cgroups, commands;
  std::map<int64_t, size_t> pids;
};

// workload[i]'s name, selector (exactly one of cgroup, pids, command; none taken by an earlier
// workload) and uid.
void compileSelector(Compiler& c, WorkloadIn& w, size_t i, const std::string& path,
                     TakenSelectors& taken, WorkloadConfig& wc) {
  Values& v = w.values;
  const std::set<std::string>& seen = w.seen;
  if (!seen.count("name")) {
    c.error(path, w.pos, w.prefix, "missing required key 'name'");
  } else if (v.count("name")) {
    wc.name = v["name"].s;
    if (auto [it, fresh] = taken.names.emplace(wc.name, i); !fresh)
      c.error(
          path, v["name"].pos, w.prefix + ".name",
          "name '" + wc.name + "' is already used by workload[" + std::to_string(it->second) + "]");
  }
  int selectors =
      static_cast<int>(seen.count("cgroup") + seen.count("pids") + seen.count("command"));
  if (selectors != 1) {
    c.error(path, w.pos, w.prefix,
            selectors == 0 ? "needs one of cgroup, pids or command"
                           : "set only one of cgroup, pids or command");
  } else if (v.count("cgroup")) {
    wc.selector.kind = WorkloadSelector::Kind::Cgroup;
    wc.selector.cgroup = v["cgroup"].s;
    if (auto [it, fresh] = taken.cgroups.emplace(wc.selector.cgroup, i); !fresh)
      c.error(path, v["cgroup"].pos, w.prefix + ".cgroup",
              "cgroup also selected by workload[" + std::to_string(it->second) + "]");
  } else if (v.count("pids")) {
    wc.selector.kind = WorkloadSelector::Kind::Pids;
    if (taken.pids.size() + v["pids"].list.size() > kMaxPids)
      c.error(path, v["pids"].pos, w.prefix + ".pids",
              "more than " + std::to_string(kMaxPids) +
                  " pids in the config's pids lists together (" +
                  std::to_string(taken.pids.size()) + " before this one, " +
                  std::to_string(v["pids"].list.size()) + " here)");
    for (int64_t p : v["pids"].list) {
      wc.selector.pids.push_back(static_cast<pid_t>(p));
      if (auto [it, fresh] = taken.pids.emplace(p, i); !fresh)
        c.error(path, v["pids"].pos, w.prefix + ".pids",
                "pid " + std::to_string(p) + " also selected by workload[" +
                    std::to_string(it->second) + "]");
    }
    std::sort(wc.selector.pids.begin(), wc.selector.pids.end());
  } else if (v.count("command")) {
    wc.selector.kind = WorkloadSelector::Kind::Command;
    wc.selector.command = v["command"].s;
    if (auto [it, fresh] = taken.commands.emplace(wc.selector.command, i); !fresh)
      c.error(path, v["command"].pos, w.prefix + ".command",
              "command also selected by workload[" + std::to_string(it->second) + "]");
  }
  if (v.count("uid")) wc.selector.uid = static_cast<uint32_t>(v["uid"].i);
}

// workload[i]'s policy. Layers: defaults < profile < workload; cold_threshold must stay below
// hot_threshold after them, and a fill_headroom below 100% needs a hot_ratio. False when a default
// failed (reported as internal): the workload is left out.
bool compileWorkloadPolicy(Compiler& c, WorkloadIn& w, const std::vector<std::string>& dirs,
                           const std::string& path, WorkloadConfig& wc) {
  Values& v = w.values;
  std::vector<const KeySpec*> layered;
  for (const KeySpec* k : sectionKeys("workload"))
    if (k->inProfile) layered.push_back(k);
  Values eff;
  c.applyDefaults(layered, eff);
  if (v.count("profile")) {
    wc.profile = v["profile"].s;
    if (const Values* pv = c.profile(wc.profile, dirs, v["profile"], wc.profilePath))
      for (auto& [key, val] : *pv)
        if (key != "description") eff[key] = val;
  }
  for (const KeySpec* k : layered)
    if (v.count(k->key)) eff[k->key] = v[k->key];
  if (eff.size() < layered.size()) return false;
  wc.policy = policyFrom(eff);
  if (wc.policy.coldThreshold >= wc.policy.hotThreshold) {
    const Parsed& at = eff["cold_threshold"];
    c.error(at.file == "<schema>" ? path : at.file, at.file == "<schema>" ? w.pos : at.pos,
            at.file == "<schema>" ? w.prefix + ".cold_threshold" : at.keyPath,
            "cold_threshold " + num(wc.policy.coldThreshold) + " must be below hot_threshold " +
                num(wc.policy.hotThreshold) +
                (wc.profile.empty() ? "" : " (after applying profile '" + wc.profile + "')"));
  }
  if (wc.policy.fills() && wc.policy.hotRatio <= 0) {
    const Parsed& at = eff["fill_headroom"];
    c.error(at.file, at.pos, at.keyPath,
            "fill_headroom needs hot_ratio above 0: without a ratio cut every region at or above "
            "hot_threshold already fills free fast memory down to fast_headroom" +
                (wc.profile.empty() ? "" : " (after applying profile '" + wc.profile + "')"));
  }
  return true;
}

// Where profiles are looked up: CompileOptions::profileDirs, else profiles/ beside the config
// file, then /etc/tierd/profiles.
std::vector<std::string> profileDirs(const CompileOptions& options, const std::string& path) {
  std::vector<std::string> dirs = options.profileDirs;
  if (dirs.empty()) {
    dirs.push_back((std::filesystem::path(path).parent_path() / "profiles").string());
    dirs.push_back("/etc/tierd/profiles");
  }
  return dirs;
}

// The [[workload]] entries, in file order.
void compileWorkloads(Compiler& c, std::vector<WorkloadIn>& workloads,
                      const std::vector<std::string>& dirs, const std::string& path,
                      std::vector<WorkloadConfig>& out) {
  TakenSelectors taken;
  for (size_t i = 0; i < workloads.size(); ++i) {
    WorkloadConfig wc;
    compileSelector(c, workloads[i], i, path, taken, wc);
    if (!compileWorkloadPolicy(c, workloads[i], dirs, path, wc)) continue;
    out.push_back(std::move(wc));
  }
}

}  // namespace

CompileOutcome compileConfigText(std::string_view text, const std::string& path,
                                 const CompileOptions& options) {
  Compiler c;
  c.trustedUid = options.trustedUid;
  CompileOutcome out;
  if (auto root = c.parseText(text, path)) {
    SectionsIn in = readSections(c, *root, path);
    CompiledConfig cfg;
    cfg.sourcePath = path;
    compileDaemon(c, in.sections["daemon"], path, cfg.daemon);
    compileTiers(c, in.sections["tiers"], path, cfg.tiers);
    compileSampling(c, in.sections["sampling"], path, options, cfg.daemon, cfg.sampling);
    compileMigration(in.sections["migration"], cfg.migration);
    compileWorkloads(c, in.workloads, profileDirs(options, path), path, cfg.workloads);
    if (c.errors.empty()) out.config = std::move(cfg);
  }
  std::stable_sort(c.errors.begin(), c.errors.end(),
                   [&](const ConfigError& a, const ConfigError& b) {
                     return std::make_tuple(a.file != path, a.file, a.line, a.column) <
                            std::make_tuple(b.file != path, b.file, b.line, b.column);
                   });
  out.errors = std::move(c.errors);
  if (!out.errors.empty()) out.config.reset();
  return out;
}

CompileOutcome compileConfigFile(const std::string& path, const CompileOptions& options) {
  Compiler c;
  c.trustedUid = options.trustedUid;
  auto text = c.readFile(path, "", {}, "");
  if (!text) {
    CompileOutcome out;
    out.errors = std::move(c.errors);
    return out;
  }
  return compileConfigText(*text, path, options);
}

}  // namespace tierd::policy

#pragma once
/// \file
/// The one table of every config key: section, name, type, unit, default, range and meaning.
/// The compiler (ConfigCompiler.cpp) validates against it and takes defaults from it, and
/// docs/configuration.md is generated from it (`tierd --print-config-schema`; a unit test fails
/// when the checked-in document differs), so code, defaults and documentation cannot drift.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tierd::policy {

/// The most bytes any byte-size key accepts: 1 PiB (written "1024TiB"), far above any machine's
/// memory, so that a typo in the unit is an error instead of a quota that wraps around.
inline constexpr uint64_t kMaxConfigBytes = 1ull << 50;

/// The most bytes of a config or profile file (and of a text given to compileConfigText): 1 MiB,
/// a hundred times the largest example config. A larger file is one error, nothing is parsed.
inline constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;

/// The most parts of one dotted key or table header (`a.b.c` has 3), checked before toml++
/// parses: toml++ builds a dotted key's tables by recursion, so a key of 100000 parts overflows
/// the stack. tierd's own keys have at most 3 (`[sampling]` + `daemon.interval` style).
inline constexpr int kMaxKeyParts = 16;

/// The most arrays and inline tables open at one point of a file (`[` and `{`, a table header's
/// brackets included), checked before toml++ parses, like kMaxKeyParts. tierd needs 3
/// (`workload = [{ pids = [1] }]`).
inline constexpr int kMaxNesting = 16;

/// The most `[[workload]]` entries of one config.
inline constexpr size_t kMaxWorkloads = 1024;

/// The most pids listed in one config, all `pids` arrays together; also the most entries of any
/// one array of ids (`pids`, `fast_nodes`, `slow_nodes`).
inline constexpr size_t kMaxPids = 4096;

/// The most distinct profiles one config names (each a file of up to kMaxConfigFileBytes), so
/// that what one compile reads stays bounded.
inline constexpr size_t kMaxProfiles = 32;

/// How a key's value is written and checked.
enum class ValueType {
  Bool,            ///< true / false
  Integer,         ///< TOML integer within [min, max]
  Number,          ///< TOML integer or float within [min, max]
  String,          ///< free text (length-checked where it matters)
  Enum,            ///< one of `choices` ("a|b|c")
  Duration,        ///< "500ms" string under `key`, or an integer of milliseconds under `key_ms`
  BytesOrPercent,  ///< "8GiB" or "25%" (percent range [min, max]; bytes 0 .. kMaxConfigBytes)
  NodeList,        ///< array of NUMA node ids in [min, max], no duplicates
  PidList,         ///< array of pids in [min, max], no duplicates
  Address,         ///< "host:port" or "[v6]:port", port 0..65535; "" disables
  CgroupPath,      ///< "/a/b": absolute, no "." or ".." components
  Name,            ///< [A-Za-z0-9_.-]+, 1..64 characters
  Path,            ///< a file path, non-empty
};

/// One key of one section. `section` is "daemon", "tiers", "sampling", "migration", "workload"
/// (each `[[workload]]` entry) or "profile" (keys only valid in a profile file).
struct KeySpec {
  const char* section;
  const char* key;
  ValueType type;
  const char* defaultText;  ///< TOML-value text of the default as written in a file ("" = none)
  double min;               ///< range in the key's unit (ns for durations, % for percentages)
  double max;
  const char* choices;  ///< Enum only: "auto|perf|damon|replay"
  bool inProfile;       ///< may also be set by a profile file (config/profiles/NAME.toml)
  bool required;        ///< must be present
  const char* unit;     ///< unit in words for the doc ("MiB/s", "samples", ...), "" = none
  const char* help;     ///< one or two sentences for docs/configuration.md
};

/// Every key, grouped by section in document order.
const std::vector<KeySpec>& configSchema();

/// The keys of one section, in document order.
std::vector<const KeySpec*> sectionKeys(const std::string& section);

/// Renders docs/configuration.md from the table (Markdown, deterministic).
std::string renderSchemaMarkdown();

}  // namespace tierd::policy

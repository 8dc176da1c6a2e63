#pragma once
/// \file
/// Strict command-line option parsing shared by tierd and tierctl: every option must be declared;
/// unknown options, missing values and repeated options are errors naming the option. Values are
/// read with the typed getters (pid, bounded integer, size, duration: ValueParsers.h), so every
/// command reads a kind of value with the same grammar and the same error.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tierd/core/Result.h"

namespace tierd::cli {

/// One declared option. `name` is the long name without dashes ("sys-root").
struct OptionSpec {
  std::string name;
  bool takesValue = false;  ///< "--name VALUE" or "--name=VALUE" when true; a flag otherwise
  std::string help;         ///< one line for --help; empty hides the option (e.g. --sys-root)
  std::string valueName = "VALUE";
};

/// Parsed options and positional arguments.
struct ParsedArgs {
  std::map<std::string, std::string> values;  ///< option name -> value ("" for flags)
  std::vector<std::string> positional;

  bool has(const std::string& name) const { return values.count(name) != 0; }
  /// The option's value, or nullopt when absent.
  std::optional<std::string> get(const std::string& name) const;

  // Typed getters. Each error is ErrorKind::Input with context "--NAME".
  /// --NAME as a process id (parsePid). Absent: "--NAME is required".
  Result<pid_t> pid(const std::string& name) const;
  /// --NAME as a decimal integer in lo..hi (parseBoundedInteger); `fallback` when absent.
  Result<uint64_t> integer(const std::string& name, uint64_t fallback, uint64_t lo,
                           uint64_t hi) const;
  /// --NAME as a byte size in the config's grammar ("1GiB"; parseSizeOption) in lo..hi bytes;
  /// `fallback` bytes when absent.
  Result<uint64_t> size(const std::string& name, uint64_t fallback, uint64_t lo = 1,
                        uint64_t hi = UINT64_MAX) const;
  /// --NAME as a duration in the config's grammar ("500ms"; parseDurationOption), nanoseconds;
  /// `fallbackNs` when absent.
  Result<uint64_t> durationNs(const std::string& name, uint64_t fallbackNs,
                              uint64_t maxNs = static_cast<uint64_t>(INT64_MAX)) const;
};

/// Parses args[begin..] against `specs`. "--" ends options. Errors (ErrorKind::Input) name the
/// offending argument. `--help`/`-h` is accepted when declared in specs.
Result<ParsedArgs> parseArgs(const std::vector<std::string>& args, size_t begin,
                             const std::vector<OptionSpec>& specs);

/// Renders the help lines of the visible options, aligned.
std::string optionHelp(const std::vector<OptionSpec>& specs);

}  // namespace tierd::cli

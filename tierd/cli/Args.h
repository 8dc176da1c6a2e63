#pragma once
/// \file
/// Strict command-line option parsing shared by tierd and tierctl: every option must be declared;
/// unknown options, missing values and repeated options are errors naming the option.

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
};

/// Parses args[begin..] against `specs`. "--" ends options. Errors (ErrorKind::Input) name the
/// offending argument. `--help`/`-h` is accepted when declared in specs.
Result<ParsedArgs> parseArgs(const std::vector<std::string>& args, size_t begin,
                             const std::vector<OptionSpec>& specs);

/// Renders the help lines of the visible options, aligned.
std::string optionHelp(const std::vector<OptionSpec>& specs);

}  // namespace tierd::cli

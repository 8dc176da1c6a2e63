#include "tierd/cli/Args.h"

#include <algorithm>

#include "tierd/cli/ValueParsers.h"

namespace tierd::cli {

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

Result<pid_t> ParsedArgs::pid(const std::string& name) const {
  auto v = get(name);
  if (!v) return Error::input("--" + name + " is required", "command line");
  return parsePid(*v, "--" + name);
}

Result<uint64_t> ParsedArgs::integer(const std::string& name, uint64_t fallback, uint64_t lo,
                                     uint64_t hi) const {
  auto v = get(name);
  if (!v) return fallback;
  return parseBoundedInteger(*v, lo, hi, "--" + name);
}

Result<uint64_t> ParsedArgs::size(const std::string& name, uint64_t fallback, uint64_t lo,
                                  uint64_t hi) const {
  auto v = get(name);
  if (!v) return fallback;
  return parseSizeOption(*v, lo, hi, "--" + name);
}

Result<uint64_t> ParsedArgs::durationNs(const std::string& name, uint64_t fallbackNs,
                                        uint64_t maxNs) const {
  auto v = get(name);
  if (!v) return fallbackNs;
  return parseDurationOption(*v, maxNs, "--" + name);
}

Result<ParsedArgs> parseArgs(const std::vector<std::string>& args, size_t begin,
                             const std::vector<OptionSpec>& specs) {
  ParsedArgs out;
  bool optionsDone = false;
  for (size_t i = begin; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (optionsDone || a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      optionsDone = true;
      continue;
    }
    std::string name = a == "-h" ? "help" : a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) return Error::input("unknown option '" + a + "'", "command line");
    if (out.has(name)) return Error::input("option --" + name + " given twice", "command line");
    if (spec->takesValue) {
      if (inlineValue) {
        out.values[name] = *inlineValue;
      } else if (i + 1 < args.size()) {
        out.values[name] = args[++i];
      } else {
        return Error::input("option --" + name + " needs a value", "command line");
      }
    } else {
      if (inlineValue) return Error::input("option --" + name + " takes no value", "command line");
      out.values[name] = "";
    }
  }
  return out;
}

std::string optionHelp(const std::vector<OptionSpec>& specs) {
  std::vector<std::pair<std::string, std::string>> rows;
  size_t width = 0;
  for (const auto& s : specs) {
    if (s.help.empty()) continue;
    std::string left = "  --" + s.name + (s.takesValue ? " " + s.valueName : "");
    width = std::max(width, left.size());
    rows.emplace_back(left, s.help);
  }
  std::string out;
  for (auto& [l, h] : rows)
    out += l + std::string(width - l.size() + 2, ' ') + h + "\n";
  return out;
}

}  // namespace tierd::cli

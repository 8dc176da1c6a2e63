#pragma once
/// \file
/// A look at TOML text before toml++ parses it, for the shapes that toml++ cannot survive:
/// toml++ builds the tables of a dotted key or table header by recursion, so `a.a.a...= 1` with
/// 100000 parts overflows the stack (a crash of `tierd --check-config`, and of the running
/// daemon on a SIGHUP reload). The scan itself is one pass in linear time with constant stack;
/// it skips strings and comments as TOML reads them and counts what toml++ would nest.

#include <optional>
#include <string>
#include <string_view>

namespace tierd::policy {

/// Where a text breaks a limit, and which.
struct ShapeProblem {
  int line = 0;    ///< 1-based
  int column = 0;  ///< 1-based, in characters (UTF-8 code points), as toml++ counts them
  std::string message;
};

/// The first place in `text` where a dotted key or table header has more than kMaxKeyParts parts
/// (ConfigSchema.h), or where more than kMaxNesting arrays and inline tables (a table header's
/// brackets included) are open at once; nullopt when there is none. A key's position is where
/// the key starts, a bracket's is the bracket. Not a TOML validator: text it passes can still be
/// invalid (toml++ says why); a run of dotted parts in an invalid value (`a = 1.2.3...`) counts
/// like a key.
std::optional<ShapeProblem> checkTomlShape(std::string_view text);

}  // namespace tierd::policy

#pragma once
/// \file
/// The manual pages tierd(8), tierctl(8) and tierd.toml(5), rendered as man(7) roff from the
/// tables that `--help` and docs/configuration.md are made of: tierd's option table, tierctl's
/// command table and each command's own --help, and the config schema (renderSchemaMarkdown).
/// The committed pages (docs/man/) are this output, checked by a drift test; the .deb installs
/// them. `tierd --print-man-page PAGE` prints one.

#include <string>
#include <string_view>
#include <vector>

#include "tierd/cli/Args.h"
#include "tierd/core/Result.h"

namespace tierd::cli {

/// Text as roff body text: `\` -> `\e`, `-` -> `\-`, a leading `.` or `'` guarded with `\&`, and
/// every non-ASCII character as `\[uXXXX]`. Never adds or removes line breaks.
std::string roffEscape(std::string_view text);

/// tierd(8): synopsis, description, every visible option of `options` (tierd's --help table),
/// files, signals, exit status, see also.
std::string renderTierdManPage(const std::vector<OptionSpec>& options);

/// tierctl(8): the command table of `tierctl --help`, then each command's own --help (and the
/// --help of `tierctl bench`'s subcommands) as printed by the command itself.
std::string renderTierctlManPage();

/// tierd.toml(5): docs/configuration.md (policy::renderSchemaMarkdown) as a manual page, each key
/// a tagged paragraph with its type, unit, default, range and meaning.
std::string renderConfigManPage();

/// The page called `name` ("tierd.8", "tierctl.8" or "tierd.toml.5"); `tierdOptions` is tierd's
/// option table. An unknown name is an Input error listing the three.
Result<std::string> renderManPage(std::string_view name,
                                  const std::vector<OptionSpec>& tierdOptions);

}  // namespace tierd::cli

#pragma once
/// \file
/// Prints a CompiledConfig: as TOML (every value explicit, units as strings; the text compiles
/// back to the same CompiledConfig when its profiles are findable) or as JSON (same keys).

#include <string>

#include "policy/Config.h"

namespace tierd::policy {

/// The compiled config as TOML text, preceded by comment lines naming the source file and the
/// profile file each workload used.
std::string configToText(const CompiledConfig& cfg);

/// The compiled config as a JSON object (same key names as the TOML file, values with units as
/// strings, e.g. "interval": "1s"), pretty-printed.
std::string configToJson(const CompiledConfig& cfg);

}  // namespace tierd::policy

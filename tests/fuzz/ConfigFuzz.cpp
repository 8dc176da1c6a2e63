// libFuzzer target for the config compiler (scripts/fuzz-config builds and runs it).
//
// Each input is compiled as the text of a main config file with compileConfigText, so one run
// goes through everything a user's file does: the limits checked before parsing (size, dotted key
// parts, nesting: ConfigSchema.h; scripts/fuzz-config lets inputs reach the size limit), toml++
// parsing, the schema checks of every section and [[workload]] entry, the unit parsers (byte
// sizes, percentages, durations and their _ms forms), profile lookup and layering (profiles are
// read from fixed read-only directories of the source tree, never from /etc) and the cross-key
// checks. A crash, a leak or an ASan/UBSan report is a bug; so is a broken promise of the
// compiler, checked here:
//  - an accepted config has no errors, a rejected one has at least one and no config;
//  - every error names the file and has a message;
//  - an accepted config printed with configToText compiles back to the same CompiledConfig
//    (ConfigFormat.h), and configToJson does not fail.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "policy/ConfigCompiler.h"
#include "policy/ConfigFormat.h"

namespace {

using tierd::policy::compileConfigText;
using tierd::policy::CompileOptions;
using tierd::policy::CompileOutcome;
using tierd::policy::ConfigError;

// The path the input is compiled "as": relative paths (sampling.trace,
// daemon.metrics_basic_auth_file) resolve against its directory, which need not exist.
constexpr const char* kPath = "/nonexistent/tierd-fuzz/tierd.toml";

CompileOptions options() {
  CompileOptions o;
  // Profiles the inputs can name: custom (valid), broken (invalid), gups, redis, gapbs.
  o.profileDirs = {TIERD_SOURCE_DIR "/tests/fixtures/config/valid/profiles",
                   TIERD_SOURCE_DIR "/tests/fixtures/config/invalid/profiles",
                   TIERD_SOURCE_DIR "/config/profiles"};
  return o;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "ConfigFuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string describeAll(const CompileOutcome& out) {
  std::string s;
  for (const ConfigError& e : out.errors)
    s += e.describe() + "\n";
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const CompileOptions kOptions = options();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CompileOutcome out = compileConfigText(text, kPath, kOptions);
  if (out.ok() == !out.errors.empty() || out.ok() != out.config.has_value())
    fail("outcome is neither a config nor a list of errors", describeAll(out));
  for (const ConfigError& e : out.errors)
    if (e.file.empty() || e.message.empty()) fail("error without file or message", e.describe());
  if (!out.ok()) return 0;

  const std::string printed = tierd::policy::configToText(*out.config);
  CompileOutcome again = compileConfigText(printed, kPath, kOptions);
  if (!again.ok())
    fail("configToText output does not compile", printed + "\n--- errors:\n" + describeAll(again));
  if (!(*again.config == *out.config))
    fail("configToText output compiles to a different config", printed);
  if (tierd::policy::configToJson(*out.config).empty()) fail("configToJson is empty", printed);
  return 0;
}

#pragma once
/// \file
/// Compiles a tierd TOML file (and the profile files its workloads name) into a CompiledConfig,
/// checking everything against the schema table (ConfigSchema.h) and reporting ALL errors at
/// once, each with the file, line and column toml++ gives for the offending key or value
/// (a TOML syntax error stops that file and is reported the same way).
///
/// Layers for each workload: schema defaults < profile file < keys in the [[workload]] entry.
/// Profiles are found as `<dir>/NAME.toml` in CompileOptions::profileDirs, first match wins
/// (default: `<directory of the config>/profiles`, then `/etc/tierd/profiles`).
///
/// Limits (ConfigSchema.h), so that a hostile or broken file costs a bounded compile and never a
/// crash: every file is read with tierd::readConfigFile (a regular file only: a directory, FIFO
/// or device is refused unread; at most kMaxConfigFileBytes), its dotted keys, table headers and
/// nesting are checked against kMaxKeyParts and kMaxNesting before toml++ parses it (one error at
/// the place, TomlShape.h), and a config names at most kMaxProfiles profiles and lists at most
/// kMaxWorkloads workloads and kMaxPids pids.
/// Strings that name a file or a command (Path and CgroupPath keys, `command`) refuse NUL and
/// other control characters.
///
/// Follows oomd's front end -> intermediate form -> compiler shape (oomd's config/ConfigTypes.h and
/// ConfigCompiler.cpp): toml++ parses,
/// this file validates and builds the immutable value. No exception escapes.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/Config.h"
#include "tierd/core/Result.h"

namespace tierd::policy {

/// One problem found in a config or profile file.
struct ConfigError {
  std::string file;     ///< path as given (config or profile file)
  int line = 0;         ///< 1-based; 0 when the problem is the file as a whole (unreadable)
  int column = 0;       ///< 1-based; 0 with line 0
  std::string keyPath;  ///< "migration.fast_headroom", "workload[1].pids[2]", "" for syntax
  std::string message;
  /// "file:line:column: key.path: message" (parts that are empty are left out).
  std::string describe() const;
  bool operator==(const ConfigError&) const = default;
};

/// Where to look for profiles, and whether to trust the files read.
struct CompileOptions {
  /// Directories searched for `NAME.toml`, in order. Empty: `<config dir>/profiles`, then
  /// `/etc/tierd/profiles`.
  std::vector<std::string> profileDirs;
  /// When set (the daemon and `tierd --check-config` set their effective uid:
  /// daemon::daemonCompileOptions), the main file and every profile file are read under the
  /// owner and mode rules of tierd::readConfigFileSafely: a file or directory that a user other
  /// than root or this uid could change is an error (line 0 for the main file; for a profile, at
  /// the workload's `profile` key). Unset (`tierctl simulate`, tests): owner and mode are not
  /// checked; a file must still be a regular file within kMaxConfigFileBytes.
  std::optional<uid_t> trustedUid;
  /// When set, called with the resolved path of `[sampling] trace` (source = "replay"); returns
  /// "" when the file can be replayed, else why not. A non-empty answer is an error at the trace
  /// key's file:line:column. The trace format lives in telemetry (Trace.h), which the policy
  /// library does not depend on, so tierd passes tierd::daemon::checkReplayTrace here.
  std::function<std::string(const std::string& path)> checkTrace;
};

/// The compiler's answer: a config when `errors` is empty, else nothing.
struct CompileOutcome {
  std::optional<CompiledConfig> config;
  std::vector<ConfigError> errors;  ///< sorted: main file first, then by file, line, column
  bool ok() const { return errors.empty() && config.has_value(); }
  /// All errors as one Input error (one describe() line each), for Result-based callers.
  Error toError() const;
};

/// Reads and compiles `path`. An unreadable file, one that is not a regular file or is larger than
/// kMaxConfigFileBytes (or, with CompileOptions::trustedUid, is unsafe) is one error with line 0.
/// Time and memory are bounded by the limits above (ConfigStore.h says how).
CompileOutcome compileConfigFile(const std::string& path, const CompileOptions& options = {});

/// Compiles `text` as if read from `path` (profile lookup is relative to `path`'s directory). A
/// text larger than kMaxConfigFileBytes is one error with line 0.
CompileOutcome compileConfigText(std::string_view text, const std::string& path,
                                 const CompileOptions& options = {});

}  // namespace tierd::policy

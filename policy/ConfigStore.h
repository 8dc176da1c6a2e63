#pragma once
/// \file
/// The last good config wins (docs/architecture.md, principle 5). A ConfigStore holds the config
/// the daemon runs with; a reload compiles the new file aside and stages it, and the daemon swaps
/// it in at the next tick boundary with applyPending(). A reload that fails leaves both the running
/// and any staged config untouched, returns every error, and is counted (metric
/// tierd_config_reloads_total{result="ok|failed"}).
///
/// A reload compiles on the caller's thread (the daemon's tick loop) and needs no bound of its
/// own: the compiler's limits (ConfigSchema.h, ConfigCompiler.h) bound what it reads and does.
/// Each file is a regular file of at most kMaxConfigFileBytes, read once; at most kMaxProfiles
/// profile files; the shape checked in one pass before toml++ parses (kMaxKeyParts,
/// kMaxNesting), so no recursion runs deep; at most kMaxWorkloads workloads and kMaxPids pids,
/// duplicates found through ordered sets. So the work is about linear in at most 33 MiB of
/// text, far below the unit's WatchdogSec, and a big or hostile file cannot starve the watchdog
/// or crash the daemon.
///
/// Threads: requestReload() may run on any thread (e.g. a signal-handling thread after SIGHUP);
/// current() and applyPending() belong to the tick loop. All methods are safe to call
/// concurrently.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "policy/ConfigCompiler.h"

namespace tierd::policy {

/// Holder of the running config and a staged replacement.
class ConfigStore {
 public:
  /// Starts with `initial` running (usually the result of compileConfigFile at startup).
  explicit ConfigStore(CompiledConfig initial, CompileOptions options = {});

  /// The config of the current tick; stays valid (shared) after a swap.
  std::shared_ptr<const CompiledConfig> current() const;

  /// Compiles `path` aside. On success stages the result (replacing an earlier staged one) and
  /// returns no errors; on failure keeps everything and returns all errors. Counts the result.
  std::vector<ConfigError> requestReload(const std::string& path);

  /// At a tick boundary: makes the staged config current. True when a swap happened.
  bool applyPending();

  /// True when a compiled config waits for the next tick boundary.
  bool hasPending() const;

  uint64_t reloadsOk() const;      ///< reloads that compiled
  uint64_t reloadsFailed() const;  ///< reloads rejected with errors

 private:
  mutable std::mutex mu_;
  CompileOptions options_;
  std::shared_ptr<const CompiledConfig> current_;
  std::shared_ptr<const CompiledConfig> pending_;
  uint64_t ok_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace tierd::policy

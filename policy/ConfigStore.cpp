#include "policy/ConfigStore.h"

namespace tierd::policy {

ConfigStore::ConfigStore(CompiledConfig initial, CompileOptions options)
    : options_(std::move(options)),
      current_(std::make_shared<const CompiledConfig>(std::move(initial))) {}

std::shared_ptr<const CompiledConfig> ConfigStore::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::vector<ConfigError> ConfigStore::requestReload(const std::string& path) {
  CompileOptions opts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    opts = options_;
  }
  CompileOutcome out = compileConfigFile(path, opts);  // compiled aside, outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (!out.ok()) {
    ++failed_;
    return out.errors;
  }
  ++ok_;
  pending_ = std::make_shared<const CompiledConfig>(std::move(*out.config));
  return {};
}

bool ConfigStore::applyPending() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending_) return false;
  current_ = std::move(pending_);
  pending_.reset();
  return true;
}

bool ConfigStore::hasPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_ != nullptr;
}

uint64_t ConfigStore::reloadsOk() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ok_;
}

uint64_t ConfigStore::reloadsFailed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

}  // namespace tierd::policy

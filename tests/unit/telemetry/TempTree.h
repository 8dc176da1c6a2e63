#pragma once
// A temporary directory tree for SysRoot-based tests, removed on destruction.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tierd::telemetry::testing {

class TempTree {
 public:
  TempTree() {
    char tmpl[] = "/tmp/tierd-telemetry-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~TempTree() { std::filesystem::remove_all(dir_); }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  const std::string& dir() const { return dir_; }
  /// Writes `content` to <dir>/<abs>, creating parent directories.
  void file(const std::string& abs, const std::string& content) const {
    std::filesystem::path p = dir_ + abs;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  void mkdir(const std::string& abs) const { std::filesystem::create_directories(dir_ + abs); }

 private:
  std::string dir_;
};

}  // namespace tierd::telemetry::testing

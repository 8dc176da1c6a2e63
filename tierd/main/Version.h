#pragma once
/// \file
/// What `tierd --version` and `tierctl --version` print: the project's version, from
/// CMakeLists.txt's project() (passed as TIERD_VERSION by tierd/main/CMakeLists.txt), so the
/// binaries, the .deb's version and the changelog name the same release.

#include <string>

namespace tierd::service {

/// "tierd X.Y.Z\n", one line for both programs.
inline std::string versionLine() {
  return std::string("tierd ") + TIERD_VERSION + "\n";
}

}  // namespace tierd::service

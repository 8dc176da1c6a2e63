#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tests/unit/support/Skip.h"
#include "tierd/core/FileSafety.h"

using namespace tierd;

namespace {
// A private temp directory (0755 root) holding one config file.
struct TempConfig {
  std::string dir;
  std::string file;
  TempConfig() {
    char name[] = "/tmp/tierd-cfg-XXXXXX";
    REQUIRE(::mkdtemp(name));
    dir = name;
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    file = dir + "/tierd.toml";
    FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs("# config\n", f);
    std::fclose(f);
    REQUIRE(::chmod(file.c_str(), 0644) == 0);
  }
  ~TempConfig() {
    ::unlink(file.c_str());
    ::rmdir(dir.c_str());
  }
};
}  // namespace

TEST_CASE("checkConfigFileSafe accepts a root-owned file not writable by others") {
  if (::geteuid() != 0) TIERD_SKIP("needs root to chown test files");
  TempConfig t;
  auto s = checkConfigFileSafe(t.file);
  CHECK_MESSAGE(s.ok(), (s.ok() ? "" : s.error().describe()));
}

TEST_CASE("checkConfigFileSafe refuses group/other-writable files, non-root owners and dirs") {
  if (::geteuid() != 0) TIERD_SKIP("needs root to chown test files");
  {
    TempConfig t;
    REQUIRE(::chmod(t.file.c_str(), 0664) == 0);
    auto s = checkConfigFileSafe(t.file);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().describe().find("writable by group or others (mode 0664)") !=
          std::string::npos);
    CHECK(s.error().describe().find("chmod go-w") != std::string::npos);
  }
  {
    TempConfig t;
    REQUIRE(::chmod(t.file.c_str(), 0646) == 0);
    CHECK_FALSE(checkConfigFileSafe(t.file).ok());
  }
  {
    TempConfig t;
    REQUIRE(::chown(t.file.c_str(), 1000, 1000) == 0);
    auto s = checkConfigFileSafe(t.file);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().describe().find("owned by uid 1000") != std::string::npos);
    // the user running tierd may own it when tierd is not root
    CHECK(checkConfigFileSafe(t.file, 1000).ok());
  }
  {
    TempConfig t;
    REQUIRE(::chmod(t.dir.c_str(), 0777) == 0);  // anyone could replace the file
    auto s = checkConfigFileSafe(t.file);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().describe().find("directory " + t.dir) != std::string::npos);
    REQUIRE(::chmod(t.dir.c_str(), 01777) == 0);  // sticky like /tmp: others cannot replace it
    CHECK(checkConfigFileSafe(t.file).ok());
  }
  {
    TempConfig t;
    REQUIRE(::chown(t.dir.c_str(), 1000, 1000) == 0);
    CHECK_FALSE(checkConfigFileSafe(t.file).ok());
  }
  CHECK_FALSE(checkConfigFileSafe("/nonexistent/tierd.toml").ok());
  CHECK_FALSE(checkConfigFileSafe("/tmp").ok());  // not a regular file
}

TEST_CASE("readConfigFileSafely checks the opened file and returns what it checked") {
  TempConfig t;
  auto text = readConfigFileSafely(t.file, ::geteuid());
  REQUIRE_MESSAGE(text.ok(), (text.ok() ? "" : text.error().describe()));
  CHECK(text.value() == "# config\n");
  // Through a symlink: the target is opened, checked and read.
  const std::string link = t.dir + "/link.toml";
  REQUIRE(::symlink(t.file.c_str(), link.c_str()) == 0);
  auto viaLink = readConfigFileSafely(link, ::geteuid());
  CHECK(viaLink.ok());
  REQUIRE(::chmod(t.file.c_str(), 0664) == 0);
  auto refused = readConfigFileSafely(link, ::geteuid());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().describe().find("writable by group or others (mode 0664)") !=
        std::string::npos);
  ::unlink(link.c_str());
  // A FIFO is refused without blocking on open.
  const std::string fifo = t.dir + "/fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto f = readConfigFileSafely(fifo, ::geteuid());
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().describe().find("not a regular file") != std::string::npos);
  ::unlink(fifo.c_str());
  CHECK_FALSE(readConfigFileSafely("/nonexistent/tierd.toml", ::geteuid()).ok());
}

TEST_CASE("readPrivateFile refuses symlinks and shared files") {
  TempConfig t;
  REQUIRE(::chmod(t.file.c_str(), 0600) == 0);
  auto ok = readPrivateFile(t.file);
  REQUIRE(ok.ok());
  CHECK(ok.value() == "# config\n");
  const std::string link = t.dir + "/link";
  REQUIRE(::symlink(t.file.c_str(), link.c_str()) == 0);
  auto viaLink = readPrivateFile(link);
  ::unlink(link.c_str());
  REQUIRE_FALSE(viaLink.ok());
  CHECK(viaLink.error().describe().find("symlink") != std::string::npos);
  REQUIRE(::chmod(t.file.c_str(), 0604) == 0);
  CHECK_FALSE(readPrivateFile(t.file).ok());
}

TEST_CASE("readPrivateFile applies the config's directory rules and never hangs on a FIFO") {
  TempConfig t;
  REQUIRE(::chmod(t.file.c_str(), 0600) == 0);
  // Whoever can write the directory can replace the secret: refused like a config file.
  REQUIRE(::chmod(t.dir.c_str(), 0777) == 0);
  auto shared = readPrivateFile(t.file);
  REQUIRE(::chmod(t.dir.c_str(), 0755) == 0);
  REQUIRE_FALSE(shared.ok());
  CHECK(shared.error().describe().find("directory " + t.dir) != std::string::npos);
  CHECK(shared.error().describe().find("secret file") != std::string::npos);
  // A sticky world-writable directory (like /tmp) is accepted, as for the config.
  REQUIRE(::chmod(t.dir.c_str(), 01777) == 0);
  CHECK(readPrivateFile(t.file).ok());
  REQUIRE(::chmod(t.dir.c_str(), 0755) == 0);
  // A FIFO with no writer: opening it must not block; it is refused as not a regular file.
  const std::string fifo = t.dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto viaFifo = readPrivateFile(fifo);
  ::unlink(fifo.c_str());
  REQUIRE_FALSE(viaFifo.ok());
  CHECK(viaFifo.error().describe().find("not a regular file") != std::string::npos);
}

TEST_CASE("readConfigFile takes regular files only, within the size cap, with or without owners") {
  TempConfig t;
  for (std::optional<uid_t> trusted : {std::optional<uid_t>{}, std::optional<uid_t>{::geteuid()}}) {
    auto why = [&](const std::string& path, size_t maxBytes) {
      auto r = readConfigFile(path, trusted, maxBytes);
      REQUIRE_FALSE(r.ok());
      return r.error().message;
    };
    CHECK(why(t.dir, 100) == "the config file is not a regular file (a directory)");
    // /dev/zero would never end; a device is refused before anything is read.
    CHECK(why("/dev/zero", 100) == "the config file is not a regular file (a character device)");
    const std::string fifo = t.dir + "/fifo.toml";  // no writer: open must not block
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    CHECK(why(fifo, 100) == "the config file is not a regular file (a FIFO)");
    ::unlink(fifo.c_str());
    // "# config\n" is 9 bytes: within a cap of 9, over a cap of 8.
    auto text = readConfigFile(t.file, trusted, 9);
    REQUIRE(text.ok());
    CHECK(text.value() == "# config\n");
    CHECK(why(t.file, 8) ==
          "the config file is larger than 8 bytes, tierd's limit for a config or profile file");
  }
  // The owner and mode rules only with a trusted uid.
  REQUIRE(::chmod(t.file.c_str(), 0666) == 0);
  CHECK(readConfigFile(t.file, std::nullopt, 100).ok());
  CHECK_FALSE(readConfigFile(t.file, ::geteuid(), 100).ok());
}

#include "tierd/core/FileSafety.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tierd {

namespace {

std::string octalMode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

bool trustedOwner(uid_t owner, uid_t trusted) {
  return owner == 0 || owner == trusted;
}

}  // namespace

namespace {

// The checks on the opened file itself: a regular file, owned by root/trusted, not writable by
// group or others. `real` is the resolved path shown in the fix-it hints.
Status checkConfigFileStat(const struct stat& st, const std::string& path, const std::string& real,
                           uid_t trustedUid) {
  if (!S_ISREG(st.st_mode)) return Error::env("the config file is not a regular file", path);
  if (!trustedOwner(st.st_uid, trustedUid))
    return Error::env("refusing a config file owned by uid " + std::to_string(st.st_uid) +
                          " (not root): a non-root user could change what tierd does with "
                          "root's capabilities; run: chown root:root " +
                          real,
                      path);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return Error::env("refusing a config file writable by group or others (mode " +
                          octalMode(st.st_mode) + "); run: chmod go-w " + real,
                      path);
  return Ok{};
}

// Every directory above `real`: whoever can write there can replace the file. `what` names the
// file in the messages ("the config file", "the secret file").
Status checkDirectoriesAbove(const std::string& real, const std::string& path, uid_t trustedUid,
                             const std::string& what = "the config file") {
  std::string dir = real;
  while (true) {
    auto slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0)
      return Error::fromErrno("cannot stat a directory above " + what, dir);
    if (!trustedOwner(ds.st_uid, trustedUid))
      return Error::env("refusing " + what + ": directory " + dir + " is owned by uid " +
                            std::to_string(ds.st_uid) + " (not root), who could replace it",
                        path);
    if ((ds.st_mode & (S_IWGRP | S_IWOTH)) && !(ds.st_mode & S_ISVTX))
      return Error::env("refusing " + what + ": directory " + dir +
                            " is writable by group or others (mode " + octalMode(ds.st_mode) +
                            "), who could replace it; run: chmod go-w " + dir,
                        path);
    if (dir == "/") break;
  }
  return Ok{};
}

// "a directory", "a FIFO", ... for the refusal of a file that is not a regular one.
const char* fileKind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a file";
}

Error tooLarge(const std::string& path, size_t maxBytes) {
  return Error::env("the config file is larger than " + std::to_string(maxBytes) +
                        " bytes, tierd's limit for a config or profile file",
                    path);
}

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Status checkConfigFileSafe(const std::string& path, uid_t trustedUid) {
  auto content = readConfigFileSafely(path, trustedUid);
  if (!content) return content.error();
  return Ok{};
}

Result<std::string> readConfigFileSafely(const std::string& path, uid_t trustedUid) {
  return readConfigFile(path, trustedUid, SIZE_MAX - 1);
}

Result<std::string> readConfigFile(const std::string& path, std::optional<uid_t> trustedUid,
                                   size_t maxBytes) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (f.fd < 0) return Error::fromErrno("cannot open the config file", path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return Error::fromErrno("cannot stat the config file", path);
  if (!S_ISREG(st.st_mode))
    return Error::env(
        std::string("the config file is not a regular file (") + fileKind(st.st_mode) + ")", path);
  if (static_cast<uint64_t>(st.st_size) > maxBytes) return tooLarge(path, maxBytes);
  if (trustedUid) {
    char resolved[PATH_MAX];
    if (!::realpath(path.c_str(), resolved))
      return Error::fromErrno("cannot resolve the config file path", path);
    const std::string real = resolved;
    if (Status s = checkConfigFileStat(st, path, real, *trustedUid); !s) return s.error();
    if (Status s = checkDirectoriesAbove(real, path, *trustedUid); !s) return s.error();
    // The directories checked must lead to the file that was opened and checked.
    struct stat now {};
    if (::stat(real.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
      return Error::env("refusing the config file: it was replaced while being checked", path);
  }
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(f.fd, buf, sizeof buf)) > 0) {
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > maxBytes) return tooLarge(path, maxBytes);  // it grew after the fstat
  }
  if (n < 0) return Error::fromErrno("cannot read the config file", path);
  return data;
}

Result<std::string> readPrivateFile(const std::string& path) {
  // O_NONBLOCK: a FIFO put there must not hang tierd (it is refused below).
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)};
  if (f.fd < 0) {
    if (errno == ELOOP) return Error::env("refusing a symlink; point to the file itself", path);
    return Error::fromErrno("cannot open", path);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return Error::fromErrno("cannot stat", path);
  if (!S_ISREG(st.st_mode)) return Error::env("not a regular file", path);
  if (!trustedOwner(st.st_uid, ::geteuid()))
    return Error::env("refusing a secret file owned by uid " + std::to_string(st.st_uid) +
                          " (must be root or the user running tierd)",
                      path);
  if (st.st_mode & 077)
    return Error::env("refusing a secret file readable or writable by group or others (mode " +
                          octalMode(st.st_mode) + "); run: chmod 600 " + path,
                      path);
  // The config's rules for the directories above, and the checked path must be the opened file.
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return Error::fromErrno("cannot resolve", path);
  const std::string real = resolved;
  if (Status s = checkDirectoriesAbove(real, path, ::geteuid(), "the secret file"); !s)
    return s.error();
  struct stat now {};
  if (::stat(real.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
    return Error::env("refusing the secret file: it was replaced while being checked", path);
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(f.fd, buf, sizeof buf)) > 0)
    data.append(buf, static_cast<size_t>(n));
  if (n < 0) return Error::fromErrno("cannot read", path);
  return data;
}

}  // namespace tierd

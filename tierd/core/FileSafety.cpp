#include "tierd/core/FileSafety.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
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

Status checkConfigFileSafe(const std::string& path, uid_t trustedUid) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    return Error::fromErrno("cannot resolve the config file path", path);
  std::string real = resolved;
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return Error::fromErrno("cannot stat the config file", path);
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
  // Every directory above: whoever can write there can replace the file.
  std::string dir = real;
  while (true) {
    auto slash = dir.rfind('/');
    dir = slash == 0 ? "/" : dir.substr(0, slash);
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0)
      return Error::fromErrno("cannot stat a directory above the config file", dir);
    if (!trustedOwner(ds.st_uid, trustedUid))
      return Error::env("refusing the config file: directory " + dir + " is owned by uid " +
                            std::to_string(ds.st_uid) + " (not root), who could replace it",
                        path);
    if ((ds.st_mode & (S_IWGRP | S_IWOTH)) && !(ds.st_mode & S_ISVTX))
      return Error::env("refusing the config file: directory " + dir +
                            " is writable by group or others (mode " + octalMode(ds.st_mode) +
                            "), who could replace it; run: chmod go-w " + dir,
                        path);
    if (dir == "/") break;
  }
  return Ok{};
}

Result<std::string> readPrivateFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) return Error::env("refusing a symlink; point to the file itself", path);
    return Error::fromErrno("cannot open", path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Error e = Error::fromErrno("cannot stat", path);
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::env("not a regular file", path);
  }
  if (!trustedOwner(st.st_uid, ::geteuid())) {
    ::close(fd);
    return Error::env("refusing a secret file owned by uid " + std::to_string(st.st_uid) +
                          " (must be root or the user running tierd)",
                      path);
  }
  if (st.st_mode & 077) {
    ::close(fd);
    return Error::env("refusing a secret file readable or writable by group or others (mode " +
                          octalMode(st.st_mode) + "); run: chmod 600 " + path,
                      path);
  }
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    data.append(buf, static_cast<size_t>(n));
  Error readErr = Error::fromErrno("cannot read", path);
  ::close(fd);
  if (n < 0) return readErr;
  return data;
}

}  // namespace tierd

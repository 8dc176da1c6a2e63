#include "tierd/sys/SysRoot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace tierd::sys {

SysRoot::SysRoot(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_.push_back('/');
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

std::string SysRoot::path(const std::string& abs) const {
  if (isLive()) return abs;
  return root_ + abs;
}

Result<std::string> SysRoot::read(const std::string& abs) const {
  const std::string p = path(abs);
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::fromErrno("cannot open", p);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = Error::fromErrno("cannot read", p);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<std::string> SysRoot::readAttr(const std::string& abs) const {
  auto r = read(abs);
  if (!r) return r.error();
  std::string& s = r.value();
  size_t b = s.find_first_not_of(" \t\n");
  size_t e = s.find_last_not_of(" \t\n");
  if (b == std::string::npos) return std::string();
  return s.substr(b, e - b + 1);
}

bool SysRoot::exists(const std::string& abs) const {
  struct stat st;
  return ::stat(path(abs).c_str(), &st) == 0;
}

Result<std::vector<std::string>> SysRoot::list(const std::string& abs) const {
  const std::string p = path(abs);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(p.c_str()), &::closedir);
  if (!dir) return Error::fromErrno("cannot list directory", p);
  std::vector<std::string> names;
  while (struct dirent* de = ::readdir(dir.get())) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status SysRoot::write(const std::string& abs, const std::string& data) const {
  const std::string p = path(abs);
  int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return Error::fromErrno("cannot open for writing", p);
  ssize_t n = ::write(fd, data.data(), data.size());
  Error e;
  bool failed = n < 0 || static_cast<size_t>(n) != data.size();
  if (failed) {
    std::string msg = "cannot write '";
    msg.append(data).append("'");
    e = Error::fromErrno(std::move(msg), p);
  }
  ::close(fd);
  if (failed) return e;
  return Ok{};
}

Result<std::string> retryWhileBusy(const std::function<Result<std::string>()>& read, int tries,
                                   unsigned pauseUs) {
  Result<std::string> r = read();
  for (int i = 1; i < tries && !r && r.error().code == EBUSY; ++i) {
    ::usleep(pauseUs);
    r = read();
  }
  return r;
}

Result<std::string> readDamonAttr(const SysRoot& root, const std::string& abs) {
  return retryWhileBusy([&] { return root.readAttr(abs); });
}

}  // namespace tierd::sys

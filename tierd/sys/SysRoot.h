#pragma once
/// \file
/// SysRoot: every /proc, /sys and cgroupfs path tierd reads or writes is resolved under one root
/// directory (docs/architecture.md, principle 2). Production uses "/" ; tests point it at a
/// checked-in fixture tree (tests/fixtures/...) so the real parsers run on real layouts. Set from
/// the hidden `--sys-root DIR` option of tierd and tierctl.

#include <functional>
#include <string>
#include <vector>

#include "tierd/core/Result.h"

namespace tierd::sys {

/// A root directory under which absolute kernel paths ("/sys/...", "/proc/...") are resolved.
/// Cheap to copy; immutable.
class SysRoot {
 public:
  /// `root` is a directory; "" or "/" mean the live system.
  explicit SysRoot(std::string root = "/");

  /// The live system ("/").
  static SysRoot live() { return SysRoot("/"); }

  /// The root directory as given ("/" for the live system, no trailing slash otherwise).
  const std::string& root() const { return root_; }
  /// True when this is the live system, so syscalls about the current machine make sense.
  bool isLive() const { return root_ == "/"; }

  /// Resolves an absolute kernel path: "/sys/x" -> "<root>/sys/x". `abs` must start with '/'.
  std::string path(const std::string& abs) const;

  /// Reads a whole file. Errors: Environment with errno and the resolved path.
  Result<std::string> read(const std::string& abs) const;
  /// Reads a file and strips one trailing newline and surrounding blanks (sysfs attribute form).
  Result<std::string> readAttr(const std::string& abs) const;
  /// True when the resolved path exists (file, dir or symlink target).
  bool exists(const std::string& abs) const;
  /// Names of the entries of a directory (no "." / ".."), sorted. Errors carry errno and path.
  Result<std::vector<std::string>> list(const std::string& abs) const;
  /// Writes `data` to an existing file (sysfs attributes). Errors carry errno and path.
  Status write(const std::string& abs, const std::string& data) const;

 private:
  std::string root_;
};

/// Calls `read` again while it fails with EBUSY, at most `tries` calls in all, `pauseUs`
/// microseconds apart, and returns the last answer (an error other than EBUSY at once). For
/// DAMON's sysfs: its kdamonds' `state` and `pid` files (mm/damon/sysfs.c state_show, pid_show)
/// only try damon_sysfs_lock, which every write of a kdamond's `state` (by tierd, damo or any
/// other tool) holds while the kernel works, and answer -EBUSY meanwhile.
Result<std::string> retryWhileBusy(const std::function<Result<std::string>()>& read,
                                   int tries = 100, unsigned pauseUs = 1000);

/// `root.readAttr(abs)` through retryWhileBusy: a DAMON sysfs attribute.
Result<std::string> readDamonAttr(const SysRoot& root, const std::string& abs);

}  // namespace tierd::sys

#pragma once
/// \file
/// Checks that files tierd trusts cannot be changed or read by the wrong users. A config file
/// decides which processes' memory tierd moves with root's capabilities, so a config that a
/// non-root user can write is a privilege escalation; a credentials file readable by others
/// leaks the metrics password.

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "tierd/core/Result.h"

namespace tierd {

/// Refuses a config file that a user other than root (or `trustedUid`, the user running tierd)
/// could change: the file must be a regular file owned by root/trustedUid and not writable by
/// group or others, and every directory above it must be owned by root/trustedUid and not
/// writable by group or others unless it has the sticky bit (like /tmp). Symlinks are followed
/// for the file (each path component is checked after resolution with realpath(3)).
/// Errors: Environment with the offending path, owner and mode, saying what to run to fix it.
/// Implemented as readConfigFileSafely without keeping the content.
Status checkConfigFileSafe(const std::string& path, uid_t trustedUid = 0);

/// The one reader of config and profile files (the daemon's start and reload, `tierd
/// --check-config`, every other compile of a file). The file is opened with O_NONBLOCK (a FIFO
/// cannot hang tierd) and must be a regular file: a directory, FIFO, socket or device (e.g.
/// /dev/zero) is refused on the opened descriptor (fstat) before anything is read. A file of
/// more than `maxBytes` bytes is refused, by its size and again while reading (no more than
/// maxBytes + 1 bytes are ever read, so a file that grows cannot make tierd read without end).
/// With `trustedUid` set, also the owner and mode rules of checkConfigFileSafe, with no window
/// between the check and the read: the directories above the resolved path are checked and that
/// path must still name the opened file (same device and inode); the content returned is read
/// from the checked descriptor, so a file swapped in after the check is never the one compiled.
/// Call from any thread; blocks only on file I/O.
/// Errors: Environment naming the path and the problem (not a regular file, too large, owner,
/// mode, a directory above); a file that cannot be opened or read gives its errno.
Result<std::string> readConfigFile(const std::string& path, std::optional<uid_t> trustedUid,
                                   size_t maxBytes);

/// readConfigFile with the owner and mode rules of `trustedUid` and no size cap of its own
/// beyond SIZE_MAX - 1 bytes (the config compiler passes its cap to readConfigFile instead).
/// Errors: as readConfigFile.
Result<std::string> readConfigFileSafely(const std::string& path, uid_t trustedUid = 0);

/// Reads a secret file (basic auth credentials). Refuses a symlink, a non-regular file (a FIFO
/// is opened without blocking, then refused), a file with any group/other permission bit, or one
/// owned by neither root nor the effective user; and, as for a config file, a file under a
/// directory that another user owns or may write (sticky directories excepted). The checks use
/// fstat on the opened descriptor and make sure the checked path still names it (no race with a
/// swapped file).
/// Errors: Environment naming the path and the problem.
Result<std::string> readPrivateFile(const std::string& path);

}  // namespace tierd

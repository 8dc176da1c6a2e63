#pragma once
/// \file
/// The one error type of tierd: a value or an Error. Every function that can fail because of the
/// environment (a missing sysfs file, a refused syscall, a malformed line) returns Result<T>; no
/// exception crosses a module boundary. Errors carry the errno (0 when not from a syscall), a
/// kind telling environment problems apart from bad input and bugs, a message, and context such
/// as the file path, so the operator can act on it.

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace tierd {

/// What caused an Error: tells the operator whether to fix the machine, the input, or file a bug.
enum class ErrorKind {
  Environment,  ///< missing file, capability, kernel feature or hardware; says what to do
  Input,        ///< malformed file content, config or command-line argument
  Unsupported,  ///< valid request this machine/kernel cannot do (e.g. fewer than two nodes)
  Internal,     ///< a bug in tierd
};

/// A failure: errno (or 0), kind, human-readable message and context (path, key, pid).
struct Error {
  int code = 0;  ///< errno value when the failure came from a syscall, else 0
  ErrorKind kind = ErrorKind::Internal;
  std::string message;  ///< what went wrong, e.g. "expected an integer, got 'abc'"
  std::string context;  ///< where, e.g. "/sys/devices/system/node/node1/meminfo:3"

  /// Builds an error from the current `errno` (read at call time) for syscall failures.
  static Error fromErrno(std::string message, std::string context);
  /// Builds an error from an explicit errno value.
  static Error sys(int err, std::string message, std::string context);
  /// Builds an input (format/content) error.
  static Error input(std::string message, std::string context);
  /// Builds an environment error with no errno (feature or hardware absent).
  static Error env(std::string message, std::string context);

  /// "context: message (strerror)" — the one-line form printed to operators.
  std::string describe() const;
  /// Returns a copy with `outer` prepended to the context ("outer: context").
  Error within(const std::string& outer) const;
};

/// Value-or-error. `ok()` tells which; `value()`/`error()` must only be called on the right side.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  /// The value, or `fallback` when this holds an error.
  T valueOr(T fallback) const { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

/// Exit code of tierd and tierctl for a bug: an Error of kind Internal, or an exception nothing
/// handled (EX_SOFTWARE, sysexits.h; docs/service.md "Exit codes").
inline constexpr int kExitInternal = 70;

/// The exit code for a command that failed with `e`: kExitInternal when e.kind is Internal (a
/// bug, whatever the call site expected), else `otherwise` (2 for a usage error, 1 when the
/// environment, an input file or the work failed).
inline int exitCodeFor(const Error& e, int otherwise) {
  return e.kind == ErrorKind::Internal ? kExitInternal : otherwise;
}

/// Result of an operation with no value.
struct Ok {};
using Status = Result<Ok>;

}  // namespace tierd

#include "tierd/core/Result.h"

#include <cstring>

namespace tierd {

Error Error::fromErrno(std::string message, std::string context) {
  return sys(errno, std::move(message), std::move(context));
}

Error Error::sys(int err, std::string message, std::string context) {
  return Error{err, ErrorKind::Environment, std::move(message), std::move(context)};
}

Error Error::input(std::string message, std::string context) {
  return Error{0, ErrorKind::Input, std::move(message), std::move(context)};
}

Error Error::env(std::string message, std::string context) {
  return Error{0, ErrorKind::Environment, std::move(message), std::move(context)};
}

std::string Error::describe() const {
  std::string out;
  if (!context.empty()) out = context + ": ";
  out += message;
  if (code != 0) {
    out += " (";
    out += std::strerror(code);
    out += ")";
  }
  return out;
}

Error Error::within(const std::string& outer) const {
  Error e = *this;
  e.context = context.empty() ? outer : outer + ": " + context;
  return e;
}

}  // namespace tierd

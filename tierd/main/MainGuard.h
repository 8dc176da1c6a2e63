#pragma once
/// \file
/// The top-level exception handler of tierd's and tierctl's main(). No exception is meant to
/// leave a module (docs/architecture.md, principle 6), but a std::bad_alloc, or a library that
/// throws (prometheus-cpp's Exposer, std::filesystem, nlohmann::json), must not end the process in
/// std::terminate: that prints an unhelpful "terminate called after ..." and skips every
/// destructor, so the engine would never stop its hotness sources (a kdamond left running after
/// tierd is gone).

#include <functional>
#include <ostream>
#include <string_view>

#include "tierd/core/Result.h"

namespace tierd::service {

/// Exit code of a program ended by an exception that nothing handled (EX_SOFTWARE, sysexits.h).
inline constexpr int kExitUncaught = kExitInternal;

/// Runs `body` (the program) and returns its exit code. An exception escaping it is caught
/// after the stack has unwound (every destructor ran: the daemon's engine stopped its sources),
/// reported on `err` as one line "PROGRAM: fatal: WHAT" ("out of memory" for std::bad_alloc),
/// and kExitUncaught is returned. Call once, from main().
int runGuarded(std::string_view program, const std::function<int()>& body, std::ostream& err);

}  // namespace tierd::service

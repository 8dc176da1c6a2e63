#include "tierd/main/MainGuard.h"

#include <exception>
#include <new>
#include <string>

namespace tierd::service {

int runGuarded(std::string_view program, const std::function<int()>& body, std::ostream& err) {
  std::string what;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    what = "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception of unknown type";
  }
  for (char& c : what)
    if (c == '\n') c = ' ';
  err << program << ": fatal: " << what << std::endl;
  return kExitUncaught;
}

}  // namespace tierd::service

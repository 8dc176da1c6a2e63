// Dropping to tierd's capabilities (tierd/sys/Capabilities.h): the plan as a pure function, and
// the drop itself in a child process when the tests run as root.
#include "tierd/sys/Capabilities.h"

#include <doctest/doctest.h>
#include <linux/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/support/Skip.h"

using namespace tierd::sys;

namespace {

constexpr CapMask bit(int c) {
  return CapMask{1} << c;
}
constexpr int kLast = 40;  // CAP_CHECKPOINT_RESTORE: Linux >= 5.9
constexpr CapMask kAll = (CapMask{1} << (kLast + 1)) - 1;
const CapMask kKeep = bit(CAP_SYS_NICE) | bit(CAP_SYS_PTRACE) | bit(CAP_PERFMON);

CapabilitySets root() {
  CapabilitySets s;
  s.bounding = s.permitted = s.effective = kAll;
  s.lastCap = kLast;
  return s;
}

}  // namespace

TEST_CASE("tierd keeps exactly the capabilities of config/tierd.service") {
  CHECK(daemonCapabilities() == kKeep);
  CHECK(capabilityNames(daemonCapabilities()) == "CAP_SYS_PTRACE CAP_SYS_NICE CAP_PERFMON");
}

TEST_CASE("root started by hand drops every other capability from every set") {
  CapabilitySets s = root();
  s.inheritable = bit(CAP_NET_ADMIN);
  s.ambient = bit(CAP_NET_ADMIN);
  const CapabilityPlan p = planCapabilityDrop(s, daemonCapabilities());
  CHECK(p.changes());
  CHECK(p.dropBounding == (kAll & ~kKeep));
  CHECK((p.dropBounding & bit(CAP_SYS_ADMIN)) != 0);
  CHECK((p.dropBounding & bit(CAP_DAC_OVERRIDE)) != 0);
  CHECK(p.permitted == kKeep);
  CHECK(p.effective == kKeep);
  CHECK(p.clearAmbient);
  CHECK(p.setSets);
  CHECK(p.missing == 0);
}

TEST_CASE("under the unit the sets are already reduced: nothing to do, no syscall") {
  CapabilitySets s;
  s.bounding = s.permitted = s.effective = kKeep;
  s.lastCap = kLast;
  const CapabilityPlan p = planCapabilityDrop(s, daemonCapabilities());
  CHECK_FALSE(p.changes());
  CHECK(p.missing == 0);
}

TEST_CASE("a kept capability that is not permitted is reported missing, never added") {
  CapabilitySets s;
  s.bounding = s.permitted = s.effective = bit(CAP_SYS_NICE) | bit(CAP_SYS_PTRACE);
  s.lastCap = kLast;
  const CapabilityPlan p = planCapabilityDrop(s, daemonCapabilities());
  CHECK(p.missing == bit(CAP_PERFMON));
  CHECK(p.permitted == (bit(CAP_SYS_NICE) | bit(CAP_SYS_PTRACE)));
  CHECK_FALSE(p.changes());
  // A kernel older than CAP_PERFMON (Linux < 5.8, last cap 37) does not know it: not missing.
  CapabilitySets old = root();
  old.lastCap = 37;
  old.bounding = old.permitted = old.effective = (CapMask{1} << 38) - 1;
  const CapabilityPlan q = planCapabilityDrop(old, daemonCapabilities());
  CHECK(q.missing == 0);
  CHECK(q.permitted == (bit(CAP_SYS_NICE) | bit(CAP_SYS_PTRACE)));
  CHECK((q.dropBounding & ~((CapMask{1} << 38) - 1)) == 0);
}

TEST_CASE("the drop applied as root leaves the process with only the kept capabilities") {
  if (::geteuid() != 0) TIERD_SKIP("needs root to hold capabilities to drop");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the drop is per process and irreversible: do it in a child
    auto before = readCapabilities();
    if (!before) ::_exit(10);
    if (!applyCapabilityPlan(planCapabilityDrop(*before, daemonCapabilities()))) ::_exit(11);
    auto after = readCapabilities();
    if (!after) ::_exit(12);
    const CapMask kept = daemonCapabilities() & before->permitted;
    if (after->effective != kept || after->permitted != kept) ::_exit(13);
    if ((after->bounding & ~daemonCapabilities()) != 0) ::_exit(14);
    if (after->ambient != 0 || after->inheritable != 0) ::_exit(15);
    // Applying the plan of the reduced sets changes nothing (what tierd under the unit sees).
    if (planCapabilityDrop(*after, daemonCapabilities()).changes()) ::_exit(16);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

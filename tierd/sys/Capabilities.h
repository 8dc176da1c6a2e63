#pragma once
/// \file
/// Dropping to the capabilities tierd needs, at start, in the program itself: config/tierd.service
/// already limits them (CapabilityBoundingSet=), but tierd started another way (a shell, another
/// init, a container) as root would otherwise run with every capability. The computation is a
/// pure function of the current sets (planCapabilityDrop, unit-tested); applyCapabilityPlan does
/// the syscalls: prctl(PR_CAPBSET_DROP) per capability (needs CAP_SETPCAP, so it comes first),
/// prctl(PR_CAP_AMBIENT_CLEAR_ALL), then capset(2). Capabilities are per thread: call before
/// any thread starts, so every thread inherits the reduced sets. Under the unit the sets are
/// already reduced and the plan is empty, so no syscall is made (capset is in @privileged,
/// which the unit's SystemCallFilter= denies).

#include <cstdint>
#include <string>

#include "tierd/core/Result.h"

namespace tierd::sys {

/// A mask of capabilities: bit N is capability N (linux/capability.h, CAP_SYS_NICE = 23).
using CapMask = uint64_t;

/// The capabilities tierd keeps, the list of config/tierd.service CapabilityBoundingSet= (see
/// the reasons there): CAP_SYS_NICE (move_pages(2) of other processes, MPOL_MF_MOVE_ALL),
/// CAP_SYS_PTRACE (move_pages and /proc/PID/{smaps,numa_maps} of other users' processes) and
/// CAP_PERFMON (system-wide perf_event_open, Linux >= 5.8).
CapMask daemonCapabilities();

/// The capabilities tierd holds only until its metrics exporter process has started
/// (telemetry/metrics/ExporterProcess.h): CAP_SETUID and CAP_SETGID, to switch that process to
/// daemon.metrics_user. Kept by the drop at start, removed from the permitted and effective sets
/// right after (dropAfterStart).
CapMask exporterSpawnCapabilities();

/// Removes `drop` from the calling thread's permitted, effective and inheritable sets (capset(2);
/// the bounding set stays: removing from it needs CAP_SETPCAP, and tierd execs nothing after).
/// No syscall when none of `drop` is permitted. Errors: Environment with errno.
Status dropPermitted(CapMask drop);

/// A thread's capability sets.
struct CapabilitySets {
  CapMask bounding = 0;
  CapMask permitted = 0;
  CapMask effective = 0;
  CapMask inheritable = 0;
  CapMask ambient = 0;
  int lastCap = 0;  ///< the highest capability this kernel knows (/proc/sys/kernel/cap_last_cap)
  bool operator==(const CapabilitySets&) const = default;
};

/// What reducing `current` to `keep` changes.
struct CapabilityPlan {
  CapMask dropBounding = 0;   ///< in the bounding set now and not kept: PR_CAPBSET_DROP each
  CapMask permitted = 0;      ///< the new permitted set: current permitted & keep
  CapMask effective = 0;      ///< the new effective set: the new permitted set
  bool clearAmbient = false;  ///< the ambient set is not empty now
  bool setSets = false;       ///< permitted/effective/inheritable change: capset(2) needed
  CapMask missing = 0;        ///< kept capabilities this kernel knows that are not permitted now
  /// True when applying the plan makes any syscall.
  bool changes() const { return dropBounding != 0 || clearAmbient || setSets; }
};

/// The plan that leaves `current` with at most `keep` (pure; capabilities above
/// current.lastCap are ignored). The inheritable and ambient sets are emptied.
CapabilityPlan planCapabilityDrop(const CapabilitySets& current, CapMask keep);

/// The calling thread's sets (capget(2), prctl PR_CAPBSET_READ and PR_CAP_AMBIENT_IS_SET).
/// Errors: Environment with errno.
Result<CapabilitySets> readCapabilities();

/// Applies `plan` to the calling thread (see the file comment). Errors: Environment naming the
/// step and errno (EPERM: not allowed here, e.g. a seccomp filter).
Status applyCapabilityPlan(const CapabilityPlan& plan);

/// Names of the capabilities in `mask` ("CAP_SYS_NICE CAP_PERFMON", or "cap_40" when unknown).
std::string capabilityNames(CapMask mask);

}  // namespace tierd::sys

#pragma once
/// \file
/// The clocks tierd reads, in one place. Pure logic never reads them (docs/architecture.md,
/// principle 1: time is passed in); the edges do (the daemon's loop, commands, benches, the
/// production page system) and hand the value on. Every timestamp in tierd (samples, ticks,
/// deadlines, log rate limits) is on monotonicNs()'s base, CLOCK_MONOTONIC, the clock perf samples
/// are stamped with (attr.clockid). clock_gettime cannot fail for these clock ids on Linux;
/// getrusage can, so threadSystemCpuNs returns a Result.

#include <cstdint>

#include "tierd/core/Result.h"

namespace tierd {

/// CLOCK_MONOTONIC now, in nanoseconds since an arbitrary point (boot, on Linux).
uint64_t monotonicNs();

/// CPU time (user + system) of the calling thread, CLOCK_THREAD_CPUTIME_ID, in nanoseconds.
uint64_t threadCpuNs();

/// CPU time (user + system) of the whole process, CLOCK_PROCESS_CPUTIME_ID, in seconds.
double processCpuSeconds();

/// System (kernel) CPU time of the calling thread, getrusage(RUSAGE_THREAD).ru_stime, in
/// nanoseconds (microsecond resolution, as the kernel reports it). Unlike clock_gettime this can
/// fail: Error (Environment, with errno: EINVAL on a kernel without RUSAGE_THREAD) rather than 0,
/// so a caller never mistakes "could not read" for "no kernel time".
Result<uint64_t> threadSystemCpuNs();

}  // namespace tierd

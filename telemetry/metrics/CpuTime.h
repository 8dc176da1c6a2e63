#pragma once
/// \file
/// CPU time of the calling thread, for tierd_daemon_cpu_seconds_total{component} (the loop
/// reads threadCpuSeconds() (tierd/core/Clock.h threadCpuNs, in seconds) before and after each
/// phase of a tick and adds the difference) and for the system CPU spent inside move_pages(2)
/// (threadSystemCpuSeconds() around each call).

#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// User + system CPU seconds of the calling thread (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
double threadCpuSeconds();

/// System (kernel) CPU seconds of the calling thread (getrusage(RUSAGE_THREAD).ru_stime, through
/// tierd/core/Clock.h threadSystemCpuNs); microsecond resolution as the kernel reports it.
/// Errors: Environment with errno when getrusage fails (never a 0 that reads as "no time").
Result<double> threadSystemCpuSeconds();

}  // namespace tierd::telemetry

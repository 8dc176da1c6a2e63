#pragma once
/// \file
/// /proc/vmstat: the kernel's event counters (migration, promotion, demotion, THP). The daemon
/// reads it each tick and feeds telemetry::VmstatDeltas, which exports the migration counters as
/// deltas (tierd_kernel_vmstat_events_total).

#include <cstdint>
#include <map>
#include <string>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::sys {

/// Reads and parses <root>/proc/vmstat ("key value" lines, parseKeyValue). Errors: Environment
/// when unreadable, Input with file:line when a line is malformed.
Result<std::map<std::string, int64_t>> readVmstat(const SysRoot& root);

}  // namespace tierd::sys

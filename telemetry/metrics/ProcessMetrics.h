#pragma once
/// \file
/// The standard process metrics every Prometheus client library exports (client_golang's process
/// collector, "process_*" in the Prometheus client-library guidelines), read from /proc/self at
/// scrape time and appended to the catalog's metrics by PrometheusSink::render(). They are not
/// catalog metrics: their names are the ecosystem's, not `tierd_*`.

#include <cstdint>
#include <optional>
#include <string>

namespace tierd::telemetry {

/// What /proc/self says about tierd, in base units.
struct ProcessStats {
  double cpuSeconds = 0;        ///< utime + stime (fields 14, 15 of /proc/self/stat) / CLK_TCK
  double startTimeSeconds = 0;  ///< Unix time: btime (/proc/stat) + starttime (field 22) / CLK_TCK
  double virtualBytes = 0;      ///< vsize (field 23), bytes
  double residentBytes = 0;     ///< rss (field 24) x the page size
  double openFds = 0;           ///< entries of /proc/self/fd
  double maxFds = 0;            ///< RLIMIT_NOFILE's soft limit
};

/// Parses the text of /proc/PID/stat (proc(5): the command is in parentheses and may hold
/// spaces and ')', so fields are counted after the last ')'). `ticksPerSecond` is
/// sysconf(_SC_CLK_TCK), `pageSize` sysconf(_SC_PAGESIZE), `bootTimeSeconds` /proc/stat's btime.
/// Fills cpuSeconds, startTimeSeconds, virtualBytes and residentBytes; nullopt when the text has
/// fewer than 24 fields.
std::optional<ProcessStats> parseProcStat(const std::string& stat, long ticksPerSecond,
                                          long pageSize, double bootTimeSeconds);

/// The process metrics of this process in the Prometheus text format (# HELP, # TYPE and one
/// sample each): process_cpu_seconds_total, process_start_time_seconds,
/// process_virtual_memory_bytes, process_resident_memory_bytes, process_open_fds,
/// process_max_fds. A file it cannot read drops the metrics that come from it, never the scrape.
std::string processMetricsText();

}  // namespace tierd::telemetry

#include "telemetry/metrics/ProcessMetrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace tierd::telemetry {

namespace {

std::string readAll(const char* path) {
  std::ifstream in(path);
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

std::optional<double> bootTime() {
  std::istringstream in(readAll("/proc/stat"));
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<double> openFds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the descriptor opendir() itself holds
}

void sample(std::ostringstream& o, const char* name, const char* type, const char* help,
            double value) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
    << name << " " << value << "\n";
}

}  // namespace

std::optional<ProcessStats> parseProcStat(const std::string& stat, long ticksPerSecond,
                                          long pageSize, double bootTimeSeconds) {
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || ticksPerSecond <= 0) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string f; in >> f;)
    fields.push_back(f);
  if (fields.size() < 22) return std::nullopt;
  auto field = [&](int n) { return std::stod(fields[static_cast<size_t>(n - 3)]); };
  try {
    ProcessStats s;
    const double tck = static_cast<double>(ticksPerSecond);
    s.cpuSeconds = (field(14) + field(15)) / tck;
    s.startTimeSeconds = bootTimeSeconds + field(22) / tck;
    s.virtualBytes = field(23);
    s.residentBytes = field(24) * static_cast<double>(pageSize);
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string processMetricsText() {
  std::ostringstream o;
  o.precision(17);
  const auto boot = bootTime();
  if (auto s = parseProcStat(readAll("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
                             ::sysconf(_SC_PAGESIZE), boot.value_or(0))) {
    sample(o, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.", s->cpuSeconds);
    if (boot)
      sample(o, "process_start_time_seconds", "gauge",
             "Start time of the process since unix epoch in seconds.", s->startTimeSeconds);
    sample(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
           s->virtualBytes);
    sample(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           s->residentBytes);
  }
  if (auto fds = openFds())
    sample(o, "process_open_fds", "gauge", "Number of open file descriptors.", *fds);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    sample(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
           static_cast<double>(lim.rlim_cur));
  return o.str();
}

}  // namespace tierd::telemetry

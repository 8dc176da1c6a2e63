#include "telemetry/hotness/DamonTrace.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "telemetry/hotness/DamonSource.h"

namespace tierd::telemetry {

namespace {

constexpr std::string_view kEvent = "events/damon/damon_aggregated";
constexpr std::string_view kPrintFmt = "print fmt: \"target_id=%lu nr_regions=%u %lu-%lu: %u %u\"";
constexpr std::string_view kPrintArgs =
    "REC->target_id, REC->nr_regions, REC->start, REC->end, REC->nr_accesses, REC->age";
constexpr std::string_view kFields[] = {"target_id", "nr_regions",  "start",
                                        "end",       "nr_accesses", "age"};

/// A cursor over one line: each step consumes what it expects or fails.
struct Cursor {
  std::string_view s;
  bool ok = true;

  void lit(std::string_view want) {
    if (ok && s.substr(0, want.size()) == want)
      s.remove_prefix(want.size());
    else
      ok = false;
  }
  uint64_t num() {
    uint64_t v = 0;
    if (!ok) return 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end == s.data()) {
      ok = false;
      return 0;
    }
    s.remove_prefix(static_cast<size_t>(end - s.data()));
    return v;
  }
};

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

/// The pid of the COMM-PID field before the " [CPU]" field of a trace line's prefix, optionally
/// followed by a "(TGID)" column (the record-tgid option). 0 when not found.
pid_t taskPid(std::string_view prefix) {
  for (size_t at = prefix.find(" ["); at != std::string_view::npos;
       at = prefix.find(" [", at + 1)) {
    size_t d = at + 2;
    while (d < prefix.size() && isDigit(prefix[d]))
      ++d;
    if (d == at + 2 || d >= prefix.size() || prefix[d] != ']') continue;
    size_t e = at;  // end of the COMM-PID field (exclusive), after trimming blanks and (TGID)
    while (e > 0 && prefix[e - 1] == ' ')
      --e;
    if (e > 0 && prefix[e - 1] == ')') {
      const size_t open = prefix.rfind('(', e - 1);
      if (open == std::string_view::npos) return 0;
      e = open;
      while (e > 0 && prefix[e - 1] == ' ')
        --e;
    }
    size_t b = e;
    while (b > 0 && isDigit(prefix[b - 1]))
      --b;
    if (b == e || b == 0 || prefix[b - 1] != '-') return 0;
    uint64_t v = 0;
    std::from_chars(prefix.data() + b, prefix.data() + e, v);
    return static_cast<pid_t>(v);
  }
  return 0;
}

/// One damon_aggregated line into `ev`; false when it does not parse.
bool parseLine(std::string_view line, size_t marker, DamonAggregatedEvent& ev) {
  ev.pid = taskPid(line.substr(0, marker));
  Cursor c{line.substr(marker + std::string_view("damon_aggregated: ").size())};
  c.lit("target_id=");
  ev.targetId = c.num();
  c.lit(" nr_regions=");
  ev.nrRegions = c.num();
  c.lit(" ");
  ev.region.start = c.num();
  c.lit("-");
  ev.region.end = c.num();
  c.lit(": ");
  ev.region.nrAccesses = c.num();
  c.lit(" ");
  ev.age = c.num();
  while (c.ok && !c.s.empty() && (c.s.back() == ' ' || c.s.back() == '\r'))
    c.s.remove_suffix(1);
  return c.ok && c.s.empty() && ev.pid > 0;
}

}  // namespace

Status checkDamonAggregatedFormat(const std::string& formatText, const std::string& path) {
  for (std::string_view f : kFields) {
    // "\tfield:unsigned long start;\toffset:..." : the name ends at ';'.
    const std::string needle = " " + std::string(f) + ";";
    bool found = false;
    for (size_t at = formatText.find("field:"); at != std::string::npos && !found;
         at = formatText.find("field:", at + 1)) {
      const size_t semi = formatText.find(';', at);
      if (semi == std::string::npos) break;
      found = semi + 1 >= needle.size() &&
              formatText.compare(semi + 1 - needle.size(), needle.size(), needle) == 0;
    }
    if (!found)
      return Error::input("damon_aggregated has no field '" + std::string(f) +
                              "': not the event format tierd reads",
                          path);
  }
  const size_t at = formatText.find(kPrintFmt);
  const std::string line =
      at == std::string::npos ? "" : formatText.substr(at, formatText.find('\n', at) - at);
  if (line.find(kPrintArgs) == std::string::npos)
    return Error::input("damon_aggregated prints another format than " + std::string(kPrintFmt) +
                            " " + std::string(kPrintArgs),
                        path);
  return Ok{};
}

std::vector<DamonAggregatedEvent> parseDamonAggregated(const std::string& text,
                                                       uint64_t* malformed) {
  std::vector<DamonAggregatedEvent> out;
  std::string_view all(text);
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    const bool complete = nl != std::string_view::npos;
    if (!complete) nl = all.size();
    const std::string_view line = all.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line.front() == '#') continue;
    const size_t marker = line.find(": damon_aggregated: ");
    if (marker == std::string_view::npos) continue;
    DamonAggregatedEvent ev;
    if (complete && parseLine(line, marker + 2, ev))
      out.push_back(ev);
    else if (malformed)
      ++*malformed;
  }
  return out;
}

DamonAggregations splitAggregations(const std::vector<DamonAggregatedEvent>& events, pid_t pid,
                                    uint64_t targetId) {
  DamonAggregations out;
  std::vector<DamonAggregatedEvent> run;
  auto complete = [&] { return !run.empty() && run.size() == run.front().nrRegions; };
  auto closeRun = [&] {
    if (complete()) {
      std::vector<DamonRegionCount>& regions = out.complete.emplace_back();
      regions.reserve(run.size());
      for (const auto& e : run)
        regions.push_back(e.region);
    }
    run.clear();
  };
  for (const auto& e : events) {
    if (e.pid != pid || e.targetId != targetId) continue;
    if (!run.empty() &&
        (e.nrRegions != run.front().nrRegions || e.region.start < run.back().region.end ||
         run.size() >= run.front().nrRegions))
      closeRun();
    run.push_back(e);
  }
  if (complete())
    closeRun();
  else
    out.tail = std::move(run);
  return out;
}

std::optional<std::string> findTracefs(DamonFs& fs) {
  for (const char* mount : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    if (fs.exists(std::string(mount) + "/instances")) return std::string(mount);
  return std::nullopt;
}

uint64_t damonTraceBufferKb(uint64_t maxRegions) {
  return std::max<uint64_t>(64, (3 * maxRegions * 64 + 1023) / 1024);
}

Result<std::string> DamonTraceInstance::probe(DamonFs& fs) {
  auto mount = findTracefs(fs);
  if (!mount)
    return Error::env(
        "tracefs is not mounted (neither /sys/kernel/tracing/instances nor "
        "/sys/kernel/debug/tracing/instances exists)",
        "tracefs");
  const std::string format = *mount + "/" + std::string(kEvent) + "/format";
  if (!fs.exists(format))
    return Error{0, ErrorKind::Unsupported,
                 "no damon:damon_aggregated event (kernel without DAMON tracepoints)", format};
  auto text = fs.readAttr(format);
  if (!text) return text.error();
  if (Status s = checkDamonAggregatedFormat(text.value(), format); !s) return s.error();
  return *mount;
}

void removeStaleDamonTraceInstances(DamonFs& fs, const std::string& tracefs) {
  auto names = fs.list(tracefs + "/instances");
  if (!names) return;
  for (const std::string& name : names.value()) {
    if (name.rfind("tierd-", 0) != 0) continue;
    const std::string pid = name.substr(6);
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), isDigit)) continue;
    if (fs.readAttr("/proc/" + pid + "/comm").valueOr("").rfind("kdamond", 0) == 0) continue;
    const std::string dir = tracefs + "/instances/" + name;
    (void)fs.write(dir + "/" + std::string(kEvent) + "/enable", "0");
    (void)fs.removeDir(dir);
  }
}

Status DamonTraceInstance::open(const std::string& tracefs, pid_t kdamondPid, uint64_t bufferKb) {
  close();
  removeStaleDamonTraceInstances(fs_, tracefs);
  const std::string dir = tracefs + "/instances/tierd-" + std::to_string(kdamondPid);
  const std::string ev = dir + "/" + std::string(kEvent);
  if (fs_.exists(dir)) {
    // Named after a kdamond pid that is ours now: a tierd that died left it, for a kdamond of
    // its own that had this pid. Nobody else names instances tierd-*.
    (void)fs_.write(ev + "/enable", "0");
    if (Status s = fs_.removeDir(dir); !s) return s;
  }
  if (Status s = fs_.makeDir(dir); !s) return s;
  dir_ = dir;
  Status s = fs_.write(dir + "/buffer_size_kb", std::to_string(bufferKb));
  if (s) s = fs_.write(ev + "/filter", "common_pid == " + std::to_string(kdamondPid));
  if (s) s = fs_.write(ev + "/enable", "1");
  if (!s) {
    close();
    return s;
  }
  return Ok{};
}

Result<std::string> DamonTraceInstance::readPipe() {
  if (dir_.empty()) return Error{0, ErrorKind::Internal, "trace instance not open", "tracefs"};
  return fs_.readAvailable(dir_ + "/trace_pipe");
}

void DamonTraceInstance::close() {
  if (dir_.empty()) return;
  (void)fs_.write(dir_ + "/" + std::string(kEvent) + "/enable", "0");
  (void)fs_.removeDir(dir_);
  dir_.clear();
}

}  // namespace tierd::telemetry

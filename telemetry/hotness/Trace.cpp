#include "telemetry/hotness/Trace.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

Result<std::string> topologyFingerprint(const sys::SysRoot& root) {
  auto online = root.readAttr("/sys/devices/system/node/online");
  if (!online) return online.error();
  auto nodes = sys::parseIdList(online.value(), root.path("/sys/devices/system/node/online"));
  if (!nodes) return nodes.error();
  std::string out;
  for (int n : nodes.value()) {
    const std::string dir = "/sys/devices/system/node/node" + std::to_string(n);
    auto cpus = root.readAttr(dir + "/cpulist");
    auto meminfo = root.read(dir + "/meminfo");
    if (!cpus) return cpus.error();
    if (!meminfo) return meminfo.error();
    auto mi = sys::parseMeminfo(meminfo.value(), root.path(dir + "/meminfo"));
    if (!mi) return mi.error();
    const uint64_t total = mi->count("MemTotal") ? mi->at("MemTotal") : 0;
    if (!out.empty()) out += ";";
    out += "node" + std::to_string(n) + ":cpus=" + cpus.value() +
           ":mem=" + std::to_string(total / kGiB) + "GiB";
  }
  return out;
}

void writeTraceHeader(std::ostream& out, const TraceHeader& h) {
  out << "tierd-trace " << h.version << "\n";
  out << "source " << h.source << "\n";
  out << "events";
  for (const auto& e : h.events)
    out << " " << e;
  out << "\n";
  out << "sample_period " << h.samplePeriod << "\n";
  out << "topology " << h.topology << "\n";
  out << "columns time_ns pid tid cpu vaddr weight data_src\n";
  out << "samples\n";
}

void writeTraceSamples(std::ostream& out, const std::vector<AccessSample>& samples) {
  for (const auto& s : samples)
    out << s.timeNs << ' ' << s.pid << ' ' << s.tid << ' ' << s.cpu << " 0x" << std::hex << s.vaddr
        << std::dec << ' ' << s.weight << " 0x" << std::hex << s.dataSource << std::dec << '\n';
}

namespace {

bool parseHex(const std::string& w, uint64_t& v) {
  if (w.rfind("0x", 0) != 0) return false;
  auto n = sys::parseHexDigits(std::string_view(w).substr(2));
  if (n) v = *n;
  return n.has_value();
}

}  // namespace

Status checkTraceFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::fromErrno("cannot read the trace", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error::fromErrno("cannot read the trace", path);
  auto t = parseTrace(ss.str(), path);
  if (!t) return t.error();
  return Ok{};
}

Result<Trace> parseTrace(std::string_view text, const std::string& context) {
  Trace t;
  std::istringstream in{std::string(text)};
  std::string line;
  size_t n = 0;
  bool inSamples = false, haveSource = false, havePeriod = false, haveTopo = false,
       haveEvents = false;
  auto where = [&] { return context + ":" + std::to_string(n); };
  while (std::getline(in, line)) {
    ++n;
    if (inSamples) {
      if (line.empty()) continue;
      std::istringstream w(line);
      std::string ts, pid, tid, cpu, vaddr, weight, src, extra;
      w >> ts >> pid >> tid >> cpu >> vaddr >> weight >> src >> extra;
      AccessSample s;
      auto t0 = sys::parseU64(ts, where());
      auto p = sys::parseI64(pid, where());
      auto td = sys::parseI64(tid, where());
      auto c = sys::parseI64(cpu, where());
      auto wt = sys::parseU64(weight, where());
      if (!extra.empty() || !t0 || !p || !td || !c || !wt || !parseHex(vaddr, s.vaddr) ||
          !parseHex(src, s.dataSource) || p.value() <= 0 || s.vaddr == 0)
        return Error::input("malformed sample line '" + line +
                                "' (want: time_ns pid tid cpu 0xvaddr weight 0xdata_src)",
                            where());
      s.timeNs = t0.value();
      s.pid = static_cast<pid_t>(p.value());
      s.tid = static_cast<pid_t>(td.value());
      s.cpu = static_cast<int>(c.value());
      s.weight = wt.value();
      t.samples.push_back(s);
      continue;
    }
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (n == 1) {
      if (key != "tierd-trace")
        return Error::input("not a tierd trace (no 'tierd-trace N')", where());
      auto v = sys::parseU64(value, where());
      if (!v) return v.error();
      if (v.value() != static_cast<uint64_t>(kTraceFormatVersion))
        return Error::input("trace format version " + value +
                                " is not supported (this build reads " +
                                std::to_string(kTraceFormatVersion) + ")",
                            where());
      t.header.version = kTraceFormatVersion;
    } else if (key == "source") {
      t.header.source = value;
      haveSource = !value.empty();
    } else if (key == "events") {
      std::istringstream w(value);
      std::string e;
      while (w >> e)
        t.header.events.push_back(e);
      haveEvents = true;
    } else if (key == "sample_period") {
      auto v = sys::parseU64(value, where());
      if (!v) return v.error();
      t.header.samplePeriod = v.value();
      havePeriod = true;
    } else if (key == "topology") {
      t.header.topology = value;
      haveTopo = true;
    } else if (key == "columns") {
      if (value != "time_ns pid tid cpu vaddr weight data_src")
        return Error::input("unexpected columns '" + value + "'", where());
    } else if (key == "samples" && value.empty()) {
      if (!haveSource || !haveEvents || !havePeriod || !haveTopo)
        return Error::input("header lacks one of source, events, sample_period, topology", where());
      inSamples = true;
    } else {
      return Error::input("unknown header line '" + line + "'", where());
    }
  }
  if (!inSamples) return Error::input("no 'samples' line: truncated trace", context);
  return t;
}

ReplaySource::ReplaySource(Trace trace)
    : header_(std::move(trace.header)), samples_(std::move(trace.samples)) {}

Result<std::vector<AccessSample>> ReplaySource::drain(uint64_t untilNs) {
  std::vector<AccessSample> out;
  while (next_ < samples_.size() && samples_[next_].timeNs <= untilNs)
    out.push_back(samples_[next_++]);
  stats_.samples += out.size();
  return out;
}

}  // namespace tierd::telemetry

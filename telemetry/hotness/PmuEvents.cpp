#include "telemetry/hotness/PmuEvents.h"

#include <perfmon/pfmlib_perf_event.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

Result<CpuId> readCpuId(const sys::SysRoot& root) {
  auto text = root.read("/proc/cpuinfo");
  if (!text) return text.error();
  CpuId id;
  bool fam = false, mod = false;
  std::istringstream in(text.value());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) break;  // end of the first processor block
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t'))
      key.pop_back();
    std::string value = line.substr(colon + 1);
    size_t b = value.find_first_not_of(' ');
    value = b == std::string::npos ? "" : value.substr(b);
    const std::string ctx = root.path("/proc/cpuinfo") + ": " + key;
    if (key == "vendor_id") id.vendor = value;
    if (key == "cpu family" || key == "model") {
      auto v = sys::parseU64(value, ctx);
      if (!v) return v.error();
      (key == "model" ? id.model : id.family) = static_cast<int>(v.value());
      (key == "model" ? mod : fam) = true;
    }
  }
  if (id.vendor.empty() || !fam || !mod)
    return Error::input("no vendor_id / cpu family / model in the first processor block",
                        root.path("/proc/cpuinfo"));
  return id;
}

Result<PmuInventory> readPmus(const sys::SysRoot& root) {
  PmuInventory inv;
  const std::string dir = "/sys/bus/event_source/devices";
  if (!root.exists(dir)) return inv;
  auto names = root.list(dir);
  if (!names) return names.error();
  inv.devices = names.value();
  // The core PMU's format/ and its mem-loads-aux event: the P-core PMU of a hybrid part, else
  // `cpu`. Both are optional (an AMD `cpu` has no mem-loads-aux; a VM may show no format/).
  auto readCore = [&](const std::string& core) {
    const std::string base = dir + "/" + core;
    if (auto fmt = root.list(base + "/format"); fmt) {
      for (const auto& f : fmt.value())
        if (auto spec = root.readAttr(base + "/format/" + f); spec)
          inv.coreFormat[f] = spec.value();
    }
    if (root.exists(base + "/events/mem-loads-aux")) {
      if (auto aux = root.readAttr(base + "/events/mem-loads-aux"); aux)
        inv.memLoadsAux = aux.value();
    }
  };
  for (const auto& n : inv.devices) {
    if (n == "cpu") inv.hasCpu = true;
    if (n == "cpu_core" || n == "ibs_op") {
      auto t = root.readAttr(dir + "/" + n + "/type");
      if (!t) return t.error();
      auto v = sys::parseU64(t.value(), root.path(dir + "/" + n + "/type"));
      if (!v) return v.error();
      if (n == "cpu_core") {
        inv.hasCpuCore = true;
        inv.cpuCoreType = static_cast<uint32_t>(v.value());
      } else {
        inv.hasIbsOp = true;
        inv.ibsOpType = static_cast<uint32_t>(v.value());
        auto fmt = root.list(dir + "/ibs_op/format");
        if (fmt) {
          for (const auto& f : fmt.value()) {
            auto spec = root.readAttr(dir + "/ibs_op/format/" + f);
            if (spec) inv.ibsOpFormat[f] = spec.value();
          }
        }
      }
    }
  }
  readCore(inv.hasCpuCore ? "cpu_core" : "cpu");
  return inv;
}

Result<FormatField> parseFormatField(const std::string& spec, const std::string& context) {
  FormatField f;
  size_t colon = spec.find(':');
  std::string word = spec.substr(0, colon);
  if (colon == std::string::npos || (word != "config" && word != "config1" && word != "config2"))
    return Error::input("expected 'config[12]:LO[-HI]', got '" + spec + "'", context);
  f.word = word == "config" ? 0 : word[6] - '0';
  std::string bits = spec.substr(colon + 1);
  size_t dash = bits.find('-');
  auto lo = sys::parseU64(bits.substr(0, dash), context);
  if (!lo) return lo.error();
  f.lo = f.hi = static_cast<int>(lo.value());
  if (dash != std::string::npos) {
    auto hi = sys::parseU64(bits.substr(dash + 1), context);
    if (!hi) return hi.error();
    f.hi = static_cast<int>(hi.value());
  }
  if (f.lo > f.hi || f.hi > 63)
    return Error::input("bit range out of order or beyond 63 in '" + spec + "'", context);
  return f;
}

namespace {

/// Sets `value` into the bits `f` names of attr's config words; false when it does not fit.
bool setField(perf_event_attr& attr, const FormatField& f, uint64_t value) {
  const int width = f.hi - f.lo + 1;
  if (width < 64 && (value >> width) != 0) return false;
  __u64* word = f.word == 0 ? &attr.config : f.word == 1 ? &attr.config1 : &attr.config2;
  *word |= value << f.lo;
  return true;
}

}  // namespace

Result<perf_event_attr> encodeSysfsEvent(uint32_t type, const std::string& spec,
                                         const std::map<std::string, std::string>& format,
                                         const std::string& context) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  std::string rest = spec;
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' '))
    rest.pop_back();
  size_t pos = 0;
  while (pos <= rest.size()) {
    const size_t comma = std::min(rest.find(',', pos), rest.size());
    const std::string term = rest.substr(pos, comma - pos);
    pos = comma + 1;
    if (term.empty()) continue;
    const size_t eq = term.find('=');
    const std::string name = term.substr(0, eq);
    uint64_t value = 1;
    if (eq != std::string::npos) {
      const std::string v = term.substr(eq + 1);
      char* end = nullptr;
      errno = 0;
      value = std::strtoull(v.c_str(), &end, 0);
      if (v.empty() || errno != 0 || *end != '\0')
        return Error::input("term '" + term + "' has no number", context);
    }
    auto it = format.find(name);
    if (it == format.end())
      return Error::input("term '" + name + "' has no format/ field on this PMU", context);
    auto f = parseFormatField(it->second, context + " format/" + name);
    if (!f) return f.error();
    if (!setField(attr, f.value(), value))
      return Error::input("term '" + term + "' does not fit " + it->second, context);
  }
  return attr;
}

std::string intelPfmPmu(int family, int model, bool* hybrid) {
  if (hybrid) *hybrid = false;
  if (family != 6) return "";
  switch (model) {
    case 0x55:  // Skylake-SP, Cascade Lake, Cooper Lake
      return "skx";
    case 0x6a:  // Ice Lake-SP
    case 0x6c:  // Ice Lake-D
      return "icx";
    case 0x8f:  // Sapphire Rapids
    case 0xcf:  // Emerald Rapids
      return "spr";
    case 0x4e:  // Skylake client
    case 0x5e:
    case 0x8e:  // Kaby/Coffee Lake
    case 0x9e:
      return "skl";
    case 0x7d:  // Ice Lake client
    case 0x7e:
      return "icl";
    case 0x97:  // Alder Lake
    case 0x9a:
    case 0xb7:  // Raptor Lake
    case 0xba:
    case 0xbf:
      // Hybrid: libpfm4 4.13 has no Alder Lake table; the Golden/Raptor Cove P-cores share
      // Sapphire Rapids' memory event codes (0xcd, 0xd0, 0xd1), so encode with `spr` and open on
      // the cpu_core PMU type.
      if (hybrid) *hybrid = true;
      return "spr";
    default:
      return "";
  }
}

Status initPfm() {
  static std::once_flag once;
  static int rc = PFM_SUCCESS;
  std::call_once(once, [] { rc = pfm_initialize(); });
  if (rc != PFM_SUCCESS)
    return Error::env(std::string("pfm_initialize failed: ") + pfm_strerror(rc), "libpfm4");
  return Ok{};
}

Result<perf_event_attr> encodePfmEvent(const std::string& event) {
  if (auto s = initPfm(); !s) return s.error();
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  int rc = pfm_get_os_event_encoding(event.c_str(), PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (rc != PFM_SUCCESS)
    return Error{0, ErrorKind::Unsupported,
                 std::string("libpfm4 cannot encode it: ") + pfm_strerror(rc), event};
  attr.size = sizeof attr;
  return attr;
}

Result<perf_event_attr> ibsOpAttr(const PmuInventory& pmus, bool l3MissOnly) {
  if (!pmus.hasIbsOp)
    return Error{0, ErrorKind::Unsupported, "no ibs_op PMU in /sys/bus/event_source/devices",
                 "IBS"};
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = pmus.ibsOpType;
  auto setBit = [&](const std::string& name) -> Status {
    auto it = pmus.ibsOpFormat.find(name);
    if (it == pmus.ibsOpFormat.end())
      return Error{0, ErrorKind::Unsupported, "ibs_op has no format/" + name, "IBS"};
    auto f = parseFormatField(it->second, "ibs_op/format/" + name);
    if (!f) return f.error();
    if (f->lo != f->hi)
      return Error::input("expected a one-bit field, got '" + it->second + "'",
                          "ibs_op/format/" + name);
    __u64* word = f->word == 0 ? &attr.config : f->word == 1 ? &attr.config1 : &attr.config2;
    *word |= uint64_t{1} << f->lo;
    return Ok{};
  };
  // cnt_ctl=1: the period counts dispatched ops rather than cycles (unbiased op sampling).
  if (pmus.ibsOpFormat.count("cnt_ctl")) {
    if (auto s = setBit("cnt_ctl"); !s) return s.error();
  }
  if (l3MissOnly && pmus.ibsOpFormat.count("l3missonly")) {
    if (auto s = setBit("l3missonly"); !s) return s.error();
  }
  // swfilt: the driver drops kernel (and hypervisor) samples itself; without the bit it refuses
  // exclude_kernel/exclude_hv (perf_ibs_init()) and PerfSampler filters in user space.
  if (pmus.ibsOpFormat.count("swfilt")) {
    if (auto s = setBit("swfilt"); !s) return s.error();
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
  }
  return attr;
}

bool isLoadLatency(const perf_event_attr& attr) {
  return (attr.config & 0xffff) == 0x01cd;
}

Result<std::vector<EventChoice>> chooseHardwareEvents(const CpuId& cpu, const PmuInventory& pmus,
                                                      const EventOptions& options) {
  std::vector<EventChoice> out;
  if (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") {
    if (!pmus.hasIbsOp)
      return Error{0, ErrorKind::Unsupported,
                   "AMD CPU (family " + std::to_string(cpu.family) +
                       ") but no ibs_op PMU in /sys/bus/event_source/devices (virtual machine, "
                       "or IBS disabled in firmware)",
                   "IBS"};
    auto attr = ibsOpAttr(pmus, options.ibsL3MissOnly);
    if (!attr) return attr.error();
    EventChoice ibs{"ibs_op", attr.value(),
                    "AMD IBS op sampling: every sampled load/store op with its data address and "
                    "latency; type " +
                        std::to_string(pmus.ibsOpType) + " from ibs_op/type"};
    ibs.periodMultiple = 16;  // perf_ibs_init(): the low 4 bits of the period must be clear
    ibs.minPeriod = 0x90;     // perf_ibs_op.min_period
    ibs.filterKernelInUser = pmus.ibsOpFormat.count("swfilt") == 0;
    ibs.dropCacheServed = true;
    out.push_back(ibs);
    return out;
  }
  if (cpu.vendor != "GenuineIntel")
    return Error{0, ErrorKind::Unsupported, "no sampling events known for vendor " + cpu.vendor,
                 "PMU"};
  bool hybrid = false;
  const std::string prefix = intelPfmPmu(cpu.family, cpu.model, &hybrid);
  if (hybrid ? !pmus.hasCpuCore : !pmus.hasCpu)
    return Error{0, ErrorKind::Unsupported,
                 std::string("no `") + (hybrid ? "cpu_core" : "cpu") +
                     "` PMU in /sys/bus/event_source/devices (virtual machine without PMU "
                     "passthrough?)",
                 "PEBS"};
  if (prefix.empty())
    return Error{0, ErrorKind::Unsupported,
                 "no PEBS event table for Intel family " + std::to_string(cpu.family) + " model " +
                     std::to_string(cpu.model),
                 "PEBS"};
  std::vector<std::pair<std::string, std::string>> events;
  if (options.intelMode == IntelMode::LoadLatency)
    events.push_back(
        {prefix + "::MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=" + std::to_string(options.ldlatCycles) +
             ":precise=2",
         "PEBS load latency: loads slower than " + std::to_string(options.ldlatCycles) +
             " cycles, weight = latency, data source"});
  else
    events.push_back({prefix + "::MEM_LOAD_RETIRED:L3_MISS:precise=3",
                      "PEBS loads that missed L3 (served by DRAM/CXL), precise data address"});
  if (options.stores)
    events.push_back({prefix + "::MEM_INST_RETIRED:ALL_STORES:precise=3",
                      "PEBS retired stores with data address (writes make pages hot too)"});
  for (auto& [name, why] : events) {
    auto attr = encodePfmEvent(name);
    if (!attr) return attr.error();
    if (hybrid) attr->type = pmus.cpuCoreType;  // P-core PMU of a hybrid part
    EventChoice choice{name, attr.value(), why + (hybrid ? " (cpu_core PMU)" : "")};
    // Load latency where the PMU has mem-loads-aux: the kernel wants it as the group leader.
    if (isLoadLatency(attr.value()) && !pmus.memLoadsAux.empty()) {
      auto aux =
          encodeSysfsEvent(attr->type, pmus.memLoadsAux, pmus.coreFormat,
                           std::string(hybrid ? "cpu_core" : "cpu") + "/events/mem-loads-aux");
      if (!aux) return aux.error();
      choice.groupLeader = aux.value();
      choice.why += "; led by mem-loads-aux (" + pmus.memLoadsAux + ")";
    }
    out.push_back(choice);
  }
  return out;
}

}  // namespace tierd::telemetry

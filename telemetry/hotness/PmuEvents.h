#pragma once
/// \file
/// Which PMU this machine has and which sampling events tierd uses on it.
/// - Intel: PEBS through the core PMU (`cpu`, or `cpu_core` on hybrid parts). Events are named
///   with libpfm4 and encoded by pfm_get_os_event_encoding (never hand-coded hex): load-latency
///   sampling MEM_TRANS_RETIRED:LOAD_LATENCY with an ldlat threshold (weight = latency), or
///   MEM_LOAD_RETIRED:L3_MISS with precise_ip; plus a store event where the model has one.
/// - AMD: IBS op sampling. libpfm4 has no IBS PMU, so the attr type comes from
///   /sys/bus/event_source/devices/ibs_op/type and config bits from its format/ files.
/// Model numbers: Intel SDM vol. 4 / the kernel's arch/x86/include/asm/intel-family.h.

#include <linux/perf_event.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tierd/core/Result.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// The boot CPU's identity from /proc/cpuinfo.
struct CpuId {
  std::string vendor;  ///< "GenuineIntel", "AuthenticAMD", ...
  int family = 0;      ///< "cpu family"
  int model = 0;       ///< "model"
};

/// Reads vendor_id, cpu family and model of the first processor in /proc/cpuinfo.
Result<CpuId> readCpuId(const sys::SysRoot& root);

/// What /sys/bus/event_source/devices offers.
struct PmuInventory {
  std::vector<std::string> devices;  ///< every event source name, sorted
  bool hasCpu = false;               ///< `cpu`: a core PMU (Intel or AMD)
  bool hasCpuCore = false;           ///< `cpu_core`: the P-core PMU of an Intel hybrid part
  uint32_t cpuCoreType = 0;          ///< cpu_core/type
  bool hasIbsOp = false;             ///< `ibs_op`: AMD IBS op sampling
  uint32_t ibsOpType = 0;            ///< ibs_op/type
  std::map<std::string, std::string> ibsOpFormat;  ///< ibs_op/format/<name> -> "config:19"
  /// The core PMU's (`cpu_core` where present, else `cpu`) format/<name> -> "config:0-7".
  std::map<std::string, std::string> coreFormat;
  /// The core PMU's events/mem-loads-aux ("event=0x03,umask=0x82"), "" when absent. The kernel
  /// shows it only where PMU_FL_MEM_LOADS_AUX is set (arch/x86/events/intel/core.c,
  /// mem_is_visible(): Sapphire Rapids, Granite Rapids, hybrid P-cores), and there a load-latency
  /// event sampling DATA_SRC must have it as group leader or perf_event_open fails with ENODATA
  /// (intel_pmu_hw_config()).
  std::string memLoadsAux;
};

/// Reads /sys/bus/event_source/devices (missing directory = no event sources at all).
Result<PmuInventory> readPmus(const sys::SysRoot& root);

/// A bit field as a PMU's sysfs format file describes it ("config:0-15", "config1:3").
struct FormatField {
  int word = 0;  ///< 0 config, 1 config1, 2 config2
  int lo = 0, hi = 0;
};
/// Parses a sysfs PMU format spec; only a single contiguous range is accepted.
Result<FormatField> parseFormatField(const std::string& spec, const std::string& context);

/// Encodes a sysfs PMU event string ("event=0x03,umask=0x82": the kernel's events/<name>) with
/// the PMU's format/ fields into the config words of an attr of PMU `type`. A term without a
/// value means 1. Errors (Input) name the term: unknown field, a value wider than its field.
Result<perf_event_attr> encodeSysfsEvent(uint32_t type, const std::string& spec,
                                         const std::map<std::string, std::string>& format,
                                         const std::string& context);

/// One event tierd would open, with the reason it was chosen and the driver's rules for it.
struct EventChoice {
  EventChoice() = default;
  /// An event with no driver rules beyond its attr.
  EventChoice(std::string eventName, const perf_event_attr& eventAttr, std::string reason)
      : name(std::move(eventName)), attr(eventAttr), why(std::move(reason)) {}

  std::string name;        ///< fully qualified libpfm4 string, or "ibs_op" for IBS
  perf_event_attr attr{};  ///< what the kernel gets (sample_period/sample_type set by PerfSampler)
  std::string why;
  /// Every sample period this event gets is a multiple of this many events. IBS: 16, because
  /// perf_ibs_init() and perf_ibs_check_period() (arch/x86/events/amd/ibs.c) refuse a period
  /// with any of its low 4 bits set (EINVAL).
  uint64_t periodMultiple = 1;
  /// The least sample period the driver takes. IBS op: 0x90 (perf_ibs_op.min_period;
  /// perf_ibs_init() and perf_ibs_check_period() refuse less with EINVAL).
  uint64_t minPeriod = 1;
  /// true where the driver cannot drop kernel samples itself (an IBS PMU whose format/ has no
  /// `swfilt`, as on older kernels: perf_ibs_init() then refuses exclude_kernel/exclude_hv): the
  /// attr keeps them clear and PerfSampler drops samples whose record header says kernel or
  /// hypervisor mode.
  bool filterKernelInUser = false;
  /// true for an event that samples every access, served from a cache or not (IBS op sampling
  /// tags every op): PerfSampler drops samples whose data source names a cache level
  /// (servedByCache()). An access the cache serves costs no memory access, so it says nothing
  /// about what placement buys; a stack in L1 would otherwise be the hottest memory there is.
  bool dropCacheServed = false;
  /// A counting event that must lead this event's group: mem-loads-aux for load latency where
  /// PmuInventory::memLoadsAux is set. PerfSampler opens it first on each CPU, disabled and
  /// without sampling, and opens this event with it as group_fd.
  std::optional<perf_event_attr> groupLeader;
};

/// Intel sampling style.
enum class IntelMode {
  LoadLatency,  ///< MEM_TRANS_RETIRED:LOAD_LATENCY, ldlat threshold, weight = latency
  L3Miss,       ///< MEM_LOAD_RETIRED:L3_MISS with precise_ip
};

/// Options of event choice.
struct EventOptions {
  IntelMode intelMode = IntelMode::LoadLatency;
  unsigned ldlatCycles = 64;  ///< load-latency threshold (cycles); 64 ~ beyond the L2
  bool stores = true;         ///< add a store event where the model has one
  /// IBS: only ops that missed L3, where the PMU offers it (Zen 4+, format/l3missonly): the
  /// hardware then tags only accesses memory served, what placement changes.
  bool ibsL3MissOnly = true;
};

/// The libpfm4 PMU prefix for an Intel model ("spr", "icx", "skx", "adl_glc", ...) and whether the
/// part is hybrid; "" when tierd has no table entry for the model.
std::string intelPfmPmu(int family, int model, bool* hybrid = nullptr);

/// Initializes libpfm4 once (pfm_initialize). LIBPFM_ENCODE_INACTIVE=1 in the environment before
/// the first call lets absent PMUs encode (tests). Errors carry pfm_strerror.
Status initPfm();

/// Encodes a libpfm4 event string with pfm_get_os_event_encoding(PFM_OS_PERF_EVENT_EXT, user
/// level only) into the perf_event_attr fields type, config, config1, precise_ip, exclude_*.
Result<perf_event_attr> encodePfmEvent(const std::string& event);

/// IBS op attr from the inventory: type = ibs_op/type, cnt_ctl set (count dispatched ops) when the
/// format has it, l3missonly when asked and available, swfilt (config2:0) with exclude_kernel and
/// exclude_hv when the format has it (perf_ibs_init() refuses the excludes without it).
Result<perf_event_attr> ibsOpAttr(const PmuInventory& pmus, bool l3MissOnly);

/// Whether `attr` is Intel's load-latency event MEM_TRANS_RETIRED.LOAD_LATENCY (event 0xcd, umask
/// 0x01: the kernel's is_mem_loads_event() for PMUs with mem-loads-aux).
bool isLoadLatency(const perf_event_attr& attr);

/// Chooses the hardware sampling events for this CPU and PMU inventory. Errors (Unsupported)
/// explain why there is none: "no `cpu` PMU in /sys/bus/event_source/devices", unknown model...
Result<std::vector<EventChoice>> chooseHardwareEvents(const CpuId& cpu, const PmuInventory& pmus,
                                                      const EventOptions& options);

}  // namespace tierd::telemetry

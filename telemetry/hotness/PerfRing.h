#pragma once
/// \file
/// Reading the perf_event mmap ring buffer (include/uapi/linux/perf_event.h): the first page is
/// struct perf_event_mmap_page; records live in [data_offset, data_offset + data_size), a power
/// of two, written by the kernel at data_head and consumed by us up to data_tail. A record may
/// wrap around the end of the data area. We load data_head with acquire order, copy a wrapped
/// record out, and store data_tail with release order (the kernel's documented protocol).
/// An empty ring is normal.

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tierd/core/Result.h"

namespace tierd::telemetry {

/// The sample_type bits PerfRing can decode. Others (CALLCHAIN, READ, RAW, BRANCH_STACK,
/// REGS_*, STACK_USER, AUX) change the record layout in ways we do not use and are refused.
inline constexpr uint64_t kSupportedSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
    PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
    PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
    PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |
    PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_WEIGHT_STRUCT;

/// One decoded PERF_RECORD_SAMPLE; fields not in sample_type stay 0.
struct PerfSample {
  uint16_t misc = 0;  ///< perf_event_header.misc: PERF_RECORD_MISC_CPUMODE_MASK bits say the mode
  uint64_t ip = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t timeNs = 0;  ///< perf clock (CLOCK_MONOTONIC when attr.use_clockid is set)
  uint64_t addr = 0;    ///< data virtual address (PERF_SAMPLE_ADDR)
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t weight = 0;  ///< WEIGHT: full u64; WEIGHT_STRUCT: var1_dw (latency in cycles)
  uint64_t dataSrc = 0;
  uint64_t physAddr = 0;
  uint64_t dataPageSize = 0;
};

/// Record counts from one drain.
struct RingCounts {
  uint64_t samples = 0;
  uint64_t lost = 0;       ///< sum of PERF_RECORD_LOST.lost
  uint64_t throttled = 0;  ///< PERF_RECORD_THROTTLE records
  uint64_t other = 0;      ///< records we skip (MMAP, COMM, UNTHROTTLE, ...)
};

/// Whether a record's header misc says user mode: PERF_RECORD_MISC_USER, or
/// PERF_RECORD_MISC_CPUMODE_UNKNOWN (kept: nothing says the sample was not taken in user mode).
/// Kernel, hypervisor and guest modes are not.
inline bool isUserMode(uint16_t misc) {
  const uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
  return mode == PERF_RECORD_MISC_USER || mode == PERF_RECORD_MISC_CPUMODE_UNKNOWN;
}

/// Decodes the body (after perf_event_header) of a PERF_RECORD_SAMPLE laid out for
/// `sampleType`. Errors (Input) when the body is shorter than the layout needs.
Result<PerfSample> decodeSample(const uint8_t* body, size_t length, uint64_t sampleType);

/// A view of one mapped ring (not owning). `base` is the start of the mapping of `length` bytes.
class PerfRing {
 public:
  PerfRing(void* base, size_t length, uint64_t sampleType);
  /// Consumes every complete record between data_tail and data_head, appending samples to `out`
  /// and adding to `counts`. A malformed record (size 0 or larger than the data area) skips the
  /// rest of the ring (tail = head) and returns an Internal error naming it.
  Status drain(std::vector<PerfSample>& out, RingCounts& counts);
  /// Bytes of the data area (power of two).
  size_t dataSize() const { return dataSize_; }

 private:
  perf_event_mmap_page* page_;
  uint8_t* data_;
  size_t dataSize_;
  uint64_t sampleType_;
  std::vector<uint8_t> scratch_;  ///< holds a record split by wraparound
};

}  // namespace tierd::telemetry

#pragma once
// A PerfEventOpener for tests: records every open (attr, pid, cpu, flags) and serves rings laid
// out exactly as the kernel lays them out (struct perf_event_mmap_page, then a power-of-two data
// area at data_offset with free-running data_head/data_tail). RingWriter appends records the way
// the kernel does, wrapping at the end of the data area.

#include <linux/perf_event.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "telemetry/hotness/PerfEventOpener.h"

namespace tierd::telemetry::testing {

/// Builds the body of a PERF_RECORD_SAMPLE for `sampleType` in the kernel's field order.
struct SampleFields {
  uint64_t ip = 0x401000;
  uint32_t pid = 100, tid = 101;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint32_t cpu = 0;
  uint64_t weight = 0;  // WEIGHT_STRUCT: var1_dw in the low 32 bits
  uint64_t dataSrc = 0;
  uint64_t phys = 0;
  uint16_t misc = PERF_RECORD_MISC_USER;  // header: the CPU mode the sample was taken in
};

inline void put64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b.push_back(static_cast<uint8_t>(v >> (8 * i)));  // little-endian, as x86 lays it out
}
inline void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

inline std::vector<uint8_t> record(uint32_t type, const std::vector<uint8_t>& body,
                                   uint16_t misc = 0) {
  // struct perf_event_header { u32 type; u16 misc; u16 size; }
  std::vector<uint8_t> r;
  put32(r, type);
  const uint32_t sizeMisc =
      (static_cast<uint32_t>(sizeof(perf_event_header) + body.size()) << 16) | misc;
  put32(r, sizeMisc);
  for (uint8_t x : body)
    r.push_back(x);
  return r;
}

inline std::vector<uint8_t> sampleRecord(uint64_t sampleType, const SampleFields& f) {
  std::vector<uint8_t> b;
  if (sampleType & PERF_SAMPLE_IP) put64(b, f.ip);
  if (sampleType & PERF_SAMPLE_TID) {
    put32(b, f.pid);
    put32(b, f.tid);
  }
  if (sampleType & PERF_SAMPLE_TIME) put64(b, f.time);
  if (sampleType & PERF_SAMPLE_ADDR) put64(b, f.addr);
  if (sampleType & PERF_SAMPLE_CPU) {
    put32(b, f.cpu);
    put32(b, 0);
  }
  if (sampleType & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) put64(b, f.weight);
  if (sampleType & PERF_SAMPLE_DATA_SRC) put64(b, f.dataSrc);
  if (sampleType & PERF_SAMPLE_PHYS_ADDR) put64(b, f.phys);
  return record(PERF_RECORD_SAMPLE, b, f.misc);
}

/// PERF_RECORD_LOST { u64 id; u64 lost; } (no sample_id_all).
inline std::vector<uint8_t> lostRecord(uint64_t lost) {
  std::vector<uint8_t> b;
  put64(b, 7);
  put64(b, lost);
  return record(PERF_RECORD_LOST, b);
}

/// PERF_RECORD_THROTTLE { u64 time; u64 id; u64 stream_id; }.
inline std::vector<uint8_t> throttleRecord(uint32_t type = PERF_RECORD_THROTTLE) {
  std::vector<uint8_t> b;
  put64(b, 1);
  put64(b, 7);
  put64(b, 7);
  return record(type, b);
}

/// One fake ring: page-aligned memory of (1 + dataPages) pages.
class FakeRing {
 public:
  FakeRing(size_t dataPages, uint64_t startOffset = 0) {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    length_ = (1 + dataPages) * page_;
    mem_ = static_cast<uint8_t*>(std::aligned_alloc(page_, length_));
    std::memset(mem_, 0, length_);
    meta()->data_offset = page_;
    meta()->data_size = dataPages * page_;
    meta()->data_head = startOffset;
    meta()->data_tail = startOffset;
  }
  ~FakeRing() { std::free(mem_); }
  FakeRing(const FakeRing&) = delete;
  FakeRing& operator=(const FakeRing&) = delete;

  perf_event_mmap_page* meta() { return reinterpret_cast<perf_event_mmap_page*>(mem_); }
  void* base() { return mem_; }
  size_t length() const { return length_; }
  /// Appends a record at data_head, wrapping as the kernel does, then publishes the new head.
  void write(const std::vector<uint8_t>& rec) {
    const uint64_t size = meta()->data_size;
    uint64_t head = meta()->data_head;
    for (size_t i = 0; i < rec.size(); ++i)
      mem_[page_ + ((head + i) & (size - 1))] = rec[i];
    __atomic_store_n(&meta()->data_head, head + rec.size(), __ATOMIC_RELEASE);
  }
  /// Appends a record as the kernel's perf_output_begin() (kernel/events/ring_buffer.c) does
  /// for a ring the reader maps writable: when it does not fit between data_head and the
  /// reader's data_tail it is dropped and counted; the next record that fits is preceded by one
  /// PERF_RECORD_LOST carrying the count. Returns whether the record was written.
  bool output(const std::vector<uint8_t>& rec) {
    const uint64_t size = meta()->data_size;
    const uint64_t used = meta()->data_head - __atomic_load_n(&meta()->data_tail, __ATOMIC_ACQUIRE);
    const std::vector<uint8_t> lost = lostRecord(dropped_);
    const uint64_t need = rec.size() + (dropped_ ? lost.size() : 0);
    if (used + need > size) {
      ++dropped_;
      return false;
    }
    if (dropped_) write(lost);
    dropped_ = 0;
    write(rec);
    return true;
  }

 private:
  uint64_t dropped_ = 0;  ///< records output() dropped since the last LOST record
  size_t page_;
  size_t length_;
  uint8_t* mem_;
};

/// Records opens; each open gets a FakeRing the test can fill (rings()[fd - 1000]).
class FakePerfEventOpener : public PerfEventOpener {
 public:
  struct Open {
    perf_event_attr attr;
    pid_t pid;
    int cpu;
    unsigned long flags;
    int groupFd = -1;
  };
  std::vector<Open> opens;
  std::vector<std::unique_ptr<FakeRing>> rings;
  std::vector<std::string> log;       // ordered operations
  uint64_t refuseSampleTypeBits = 0;  // open() fails with EINVAL while sample_type has these
  uint64_t startOffset = 0;
  /// A driver's event_init: gets the open about to happen (and the opens so far, to find the
  /// group leader by groupFd) and returns the errno the kernel would, 0 to accept.
  std::function<int(const Open&, const std::vector<Open>&)> driver;
  /// A driver's check_period (PERF_EVENT_IOC_PERIOD): the errno for (attr of fd, period), 0 = ok.
  std::function<int(const perf_event_attr&, uint64_t)> checkPeriod;

  /// The attr opened as `fd` (fds count from 1000 in open order).
  const perf_event_attr& attrOf(int fd) const {
    return opens.at(static_cast<size_t>(fd - 1000)).attr;
  }

  Result<int> open(const perf_event_attr& attr, pid_t pid, int cpu, int groupFd,
                   unsigned long flags) override {
    if (attr.sample_type & refuseSampleTypeBits) {
      log.push_back("open EINVAL");
      return Error::sys(EINVAL, "perf_event_open failed", "fake");
    }
    if (driver) {
      if (int err = driver(Open{attr, pid, cpu, flags, groupFd}, opens); err != 0) {
        log.push_back("open errno " + std::to_string(err));
        return Error::sys(err, "perf_event_open failed", "fake");
      }
    }
    opens.push_back({attr, pid, cpu, flags, groupFd});
    rings.push_back(nullptr);  // created by map() with the length asked for
    int fd = 1000 + static_cast<int>(rings.size()) - 1;
    log.push_back("open cpu " + std::to_string(cpu) + " -> " + std::to_string(fd));
    return fd;
  }
  Result<void*> map(int fd, size_t length) override {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t dataPages = length / page - 1;
    // The kernel wants 1 + 2^n pages.
    if (length % page || dataPages == 0 || (dataPages & (dataPages - 1)))
      return Error::sys(EINVAL, "bad length", "fake");
    auto& r = rings.at(static_cast<size_t>(fd - 1000));
    r = std::make_unique<FakeRing>(dataPages, startOffset);
    log.push_back("map " + std::to_string(fd));
    return r->base();
  }
  void unmap(void*, size_t) override { log.push_back("unmap"); }
  Status enable(int fd, bool on) override {
    log.push_back((on ? "enable " : "disable ") + std::to_string(fd));
    return Ok{};
  }
  Status setPeriod(int fd, uint64_t period) override {
    if (checkPeriod) {
      if (int err = checkPeriod(attrOf(fd), period); err != 0) {
        log.push_back("period errno " + std::to_string(err));
        return Error::sys(err, "PERF_EVENT_IOC_PERIOD failed", "fake");
      }
    }
    log.push_back("period " + std::to_string(fd) + " " + std::to_string(period));
    return Ok{};
  }
  void close(int fd) override { log.push_back("close " + std::to_string(fd)); }
};

}  // namespace tierd::telemetry::testing

#include "telemetry/hotness/PerfRing.h"

#include <unistd.h>

#include <cstring>
#include <string>

namespace tierd::telemetry {

namespace {

class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool u64(uint64_t& v) { return take(&v, 8); }
  bool u32(uint32_t& v) { return take(&v, 4); }
  bool skip(size_t n) {
    if (off_ + n > n_) return false;
    off_ += n;
    return true;
  }

 private:
  bool take(void* v, size_t n) {
    if (off_ + n > n_) return false;
    std::memcpy(v, p_ + off_, n);
    off_ += n;
    return true;
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

}  // namespace

Result<PerfSample> decodeSample(const uint8_t* body, size_t length, uint64_t sampleType) {
  PerfSample s;
  Cursor c(body, length);
  bool ok = true;
  uint64_t ignored = 0;
  // Field order of PERF_RECORD_SAMPLE as documented in include/uapi/linux/perf_event.h.
  if (sampleType & PERF_SAMPLE_IDENTIFIER) ok = ok && c.u64(ignored);
  if (sampleType & PERF_SAMPLE_IP) ok = ok && c.u64(s.ip);
  if (sampleType & PERF_SAMPLE_TID) ok = ok && c.u32(s.pid) && c.u32(s.tid);
  if (sampleType & PERF_SAMPLE_TIME) ok = ok && c.u64(s.timeNs);
  if (sampleType & PERF_SAMPLE_ADDR) ok = ok && c.u64(s.addr);
  if (sampleType & PERF_SAMPLE_ID) ok = ok && c.u64(ignored);
  if (sampleType & PERF_SAMPLE_STREAM_ID) ok = ok && c.u64(ignored);
  if (sampleType & PERF_SAMPLE_CPU) {
    uint32_t res = 0;
    ok = ok && c.u32(s.cpu) && c.u32(res);
  }
  if (sampleType & PERF_SAMPLE_PERIOD) ok = ok && c.u64(s.period);
  if (sampleType & PERF_SAMPLE_WEIGHT) {
    ok = ok && c.u64(s.weight);
  } else if (sampleType & PERF_SAMPLE_WEIGHT_STRUCT) {
    uint64_t w = 0;
    ok = ok && c.u64(w);
    s.weight = w & 0xffffffffu;  // union perf_sample_weight: var1_dw is the low 32 bits (LE)
  }
  if (sampleType & PERF_SAMPLE_DATA_SRC) ok = ok && c.u64(s.dataSrc);
  if (sampleType & PERF_SAMPLE_TRANSACTION) ok = ok && c.u64(ignored);
  if (sampleType & PERF_SAMPLE_PHYS_ADDR) ok = ok && c.u64(s.physAddr);
  if (sampleType & PERF_SAMPLE_CGROUP) ok = ok && c.u64(ignored);
  if (sampleType & PERF_SAMPLE_DATA_PAGE_SIZE) ok = ok && c.u64(s.dataPageSize);
  if (sampleType & PERF_SAMPLE_CODE_PAGE_SIZE) ok = ok && c.u64(ignored);
  if (!ok)
    return Error::input(
        "sample record of " + std::to_string(length) + " bytes is too short for sample_type",
        "perf ring");
  return s;
}

PerfRing::PerfRing(void* base, size_t length, uint64_t sampleType)
    : page_(static_cast<perf_event_mmap_page*>(base)), sampleType_(sampleType) {
  size_t pageSize = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uint64_t off = page_->data_offset;
  uint64_t size = page_->data_size;
  if (size == 0) {  // kernels before 4.1 leave these 0: data follows the first page
    off = pageSize;
    size = length - pageSize;
  }
  data_ = static_cast<uint8_t*>(base) + off;
  dataSize_ = size;
}

Status PerfRing::drain(std::vector<PerfSample>& out, RingCounts& counts) {
  const uint64_t head = __atomic_load_n(&page_->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = page_->data_tail;
  Status status = Ok{};
  while (tail < head) {
    perf_event_header hdr;
    const size_t pos = tail & (dataSize_ - 1);
    // The header itself may straddle the end (records are 8-byte aligned, so it never does in
    // practice; copy byte-wise anyway).
    for (size_t i = 0; i < sizeof hdr; ++i)
      reinterpret_cast<uint8_t*>(&hdr)[i] = data_[(pos + i) & (dataSize_ - 1)];
    if (hdr.size < sizeof hdr || hdr.size > dataSize_ || tail + hdr.size > head) {
      status = Error{0, ErrorKind::Internal,
                     "malformed perf record (size " + std::to_string(hdr.size) + ") at offset " +
                         std::to_string(tail) + "; skipped the rest of the ring",
                     "perf ring"};
      tail = head;
      break;
    }
    const uint8_t* rec;
    if (pos + hdr.size <= dataSize_) {
      rec = data_ + pos;
    } else {  // split by wraparound: copy both parts into one buffer
      scratch_.resize(hdr.size);
      const size_t first = dataSize_ - pos;
      std::memcpy(scratch_.data(), data_ + pos, first);
      std::memcpy(scratch_.data() + first, data_, hdr.size - first);
      rec = scratch_.data();
    }
    const uint8_t* body = rec + sizeof hdr;
    const size_t bodyLen = hdr.size - sizeof hdr;
    switch (hdr.type) {
      case PERF_RECORD_SAMPLE: {
        auto s = decodeSample(body, bodyLen, sampleType_);
        if (s) {
          s->misc = hdr.misc;
          out.push_back(s.value());
          ++counts.samples;
        } else {
          status = s.error();
        }
        break;
      }
      case PERF_RECORD_LOST: {  // { u64 id; u64 lost; sample_id }
        uint64_t lost = 0;
        if (bodyLen >= 16) std::memcpy(&lost, body + 8, 8);
        counts.lost += lost;
        break;
      }
      case PERF_RECORD_THROTTLE:
        ++counts.throttled;
        break;
      default:
        ++counts.other;
    }
    tail += hdr.size;
  }
  __atomic_store_n(&page_->data_tail, tail, __ATOMIC_RELEASE);
  return status;
}

}  // namespace tierd::telemetry

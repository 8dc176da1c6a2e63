#pragma once
/// \file
/// Recorded sample traces (docs/trace-format.md): a versioned text header (format version, source,
/// events, sample period, topology fingerprint) then one sample per line. `tierctl record`
/// writes them; ReplaySource plays them back so policies can be tested and tuned offline.

#include <cstdint>
#include <deque>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/hotness/HotnessSource.h"
#include "tierd/core/Result.h"
#include "tierd/core/Types.h"
#include "tierd/sys/SysRoot.h"

namespace tierd::telemetry {

/// The trace format version this build writes and reads.
inline constexpr int kTraceFormatVersion = 1;

/// Header of a trace.
struct TraceHeader {
  int version = kTraceFormatVersion;
  std::string source;               ///< HotnessSource::name() that produced it
  std::vector<std::string> events;  ///< event names (libpfm4 strings, "software/page-faults"...)
  uint64_t samplePeriod = 0;        ///< events per sample at the start of the recording
  std::string topology;             ///< topologyFingerprint() of the recording machine
};

/// A whole trace in memory.
struct Trace {
  TraceHeader header;
  std::vector<AccessSample> samples;  ///< in recording order (time ascending per drain)
};

/// A short, stable description of the machine's NUMA layout read under `root`:
/// "node0:cpus=0-1:mem=23GiB;node1:cpus=:mem=4GiB" (memory rounded down to GiB).
Result<std::string> topologyFingerprint(const sys::SysRoot& root);

/// Writes the header (once) and samples; see docs/trace-format.md.
void writeTraceHeader(std::ostream& out, const TraceHeader& header);
void writeTraceSamples(std::ostream& out, const std::vector<AccessSample>& samples);

/// Parses a trace. Errors (Input) name `context`:line: unknown version, missing header keys,
/// malformed sample lines.
Result<Trace> parseTrace(std::string_view text, const std::string& context);

/// Reads and parses the trace file `path` (header and samples). Errors: the file cannot be read
/// (errno), or parseTrace's Input error naming `path`:line.
Status checkTraceFile(const std::string& path);

/// A HotnessSource that replays a trace: drain(until) returns the samples with timeNs <= until in
/// file order. `stats().samples` counts what was returned.
class ReplaySource final : public HotnessSource {
 public:
  explicit ReplaySource(Trace trace);
  std::string name() const override { return std::string(sourceInfo(SourceKind::Replay).name); }
  Status start() override { return Ok{}; }
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override;
  void stop() override {}
  SourceStats stats() const override { return stats_; }
  /// The header of the replayed trace.
  const TraceHeader& header() const { return header_; }
  /// True when every sample has been returned.
  bool done() const { return next_ >= samples_.size(); }

 private:
  TraceHeader header_;
  std::vector<AccessSample> samples_;
  size_t next_ = 0;
  SourceStats stats_;
};

}  // namespace tierd::telemetry

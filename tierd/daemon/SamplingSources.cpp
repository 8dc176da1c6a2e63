#include "tierd/daemon/SamplingSources.h"

#include <algorithm>

namespace tierd::daemon {

SamplingSources::SamplingSources(SourceFactory factory) : factory_(std::move(factory)) {}

void SamplingSources::start(pid_t pid, const std::string& workload, uint64_t nowNs,
                            TickReport& report, EngineTotals& totals) {
  Slot& slot = slots_[pid];
  slot.workload = workload;
  startSlot(pid, slot, nowNs, report, totals);
}

void SamplingSources::startSlot(pid_t pid, Slot& slot, uint64_t nowNs, TickReport& report,
                                EngineTotals& totals) {
  auto source = factory_ ? factory_(pid, slot.workload)
                         : Result<std::unique_ptr<telemetry::HotnessSource>>(
                               Error::env("no hotness source configured", "sampling"));
  Status st =
      source ? (source.value() ? source.value()->start() : Status(Ok{})) : Status(source.error());
  if (st && source && source.value()) {
    slot.source = std::move(source.value());
    slot.failed = false;
    slot.backoffNs = 0;
    return;
  }
  if (st) return;  // the factory chose not to sample this process
  ++totals.sourceErrors;
  slot.failed = true;
  // Tried again later (DAMON busy, a slot freed, a transient failure), backing off 1 s, 2 s, ...
  slot.backoffNs =
      slot.backoffNs == 0 ? kSourceRetryMinNs : std::min(kSourceRetryMaxNs, slot.backoffNs * 2);
  slot.retryAtNs = nowNs + slot.backoffNs;
  report.problems.push_back("pid " + std::to_string(pid) + ": sampling: " + st.error().describe() +
                            " (retried in " + std::to_string(slot.backoffNs / 1'000'000'000) +
                            " s)");
}

void SamplingSources::retryDue(uint64_t nowNs, TickReport& report, EngineTotals& totals) {
  for (auto& [pid, slot] : slots_)
    if (slot.failed && !slot.source && nowNs >= slot.retryAtNs) {
      ++totals.sourceRetries;
      startSlot(pid, slot, nowNs, report, totals);
    }
}

void SamplingSources::drop(pid_t pid) {
  auto it = slots_.find(pid);
  if (it == slots_.end()) return;
  if (it->second.source) it->second.source->stop();
  slots_.erase(it);
}

void SamplingSources::stopAll() {
  for (auto& [pid, slot] : slots_)
    if (slot.source) slot.source->stop();
}

void SamplingSources::collect() {
  for (auto& [pid, slot] : slots_) {
    if (!slot.source) continue;
    if (Status s = slot.source->collect(); !s && slot.collectError.empty())
      slot.collectError = s.error().describe();
  }
}

void SamplingSources::drain(uint64_t nowNs, policy::TickSpan span, policy::HeatModel& heat,
                            TickReport& report, EngineTotals& totals) {
  for (auto& [pid, slot] : slots_) {
    if (!slot.source) continue;
    if (!slot.collectError.empty()) {
      ++totals.sourceErrors;
      report.problems.push_back("pid " + std::to_string(pid) + ": collect: " + slot.collectError);
      slot.collectError.clear();
    }
    auto batch = slot.source->drain(nowNs);
    if (!batch) {
      ++totals.sourceErrors;
      report.problems.push_back("pid " + std::to_string(pid) +
                                ": drain: " + batch.error().describe());
      continue;
    }
    std::vector<AccessSample>& samples = batch.value();
    samples.erase(std::remove_if(samples.begin(), samples.end(),
                                 [&self = pid](const AccessSample& s) { return s.pid != self; }),
                  samples.end());
    report.samples += samples.size();
    slot.samples += samples.size();
    heat.ingest(samples, nowNs, slot.source->weightKind() == telemetry::WeightKind::Weighted, span);
    if (std::string st = slot.source->state(); !st.empty())
      report.sourceStates.push_back({pid, slot.source->name(), std::move(st)});
  }
  heat.decay(nowNs);
  totals.samples += report.samples;
}

void SamplingSources::setSettled(bool settled) {
  for (auto& [pid, slot] : slots_)
    if (slot.source) slot.source->setSettled(settled);
}

uint64_t SamplingSources::pause(uint64_t nowNs, uint64_t waitNs, uint64_t windowNs,
                                std::vector<std::string>& problems) {
  if (windowNs == 0) return 0;
  uint64_t lead = windowNs;
  bool any = false;
  for (auto& [pid, slot] : slots_) {
    if (!slot.source) continue;
    const uint64_t need = slot.source->pauseLeadNs();
    if (need == 0) {
      if (!slot.pauseWarned)
        problems.push_back("pid " + std::to_string(pid) + ": sampling.settled_damon_window: " +
                           slot.source->name() + " cannot pause; it samples throughout");
      slot.pauseWarned = true;
      continue;
    }
    any = true;
    lead = std::max(lead, need);
  }
  if (!any || lead >= waitNs) return 0;
  bool paused = false;
  for (auto& [pid, slot] : slots_) {
    if (!slot.source || slot.source->pauseLeadNs() == 0) continue;
    if (Status st = slot.source->setPaused(true); !st) {
      problems.push_back("pid " + std::to_string(pid) + ": pause: " + st.error().describe());
      continue;
    }
    slot.paused = paused = true;
  }
  if (paused) pausedAtNs_ = nowNs;
  return paused ? lead : 0;
}

void SamplingSources::resume(uint64_t nowNs, std::vector<std::string>& problems,
                             EngineTotals& totals) {
  for (auto& [pid, slot] : slots_) {
    if (!slot.paused) continue;
    slot.paused = false;
    totals.samplingPausedNs += nowNs > pausedAtNs_ ? nowNs - pausedAtNs_ : 0;
    if (!slot.source) continue;
    if (Status st = slot.source->setPaused(false); !st)
      problems.push_back("pid " + std::to_string(pid) + ": resume: " + st.error().describe());
  }
}

const telemetry::HotnessSource* SamplingSources::sourceOf(pid_t pid) const {
  auto it = slots_.find(pid);
  return it == slots_.end() ? nullptr : it->second.source.get();
}

uint64_t SamplingSources::samplesOf(pid_t pid) const {
  auto it = slots_.find(pid);
  return it == slots_.end() ? 0 : it->second.samples;
}

std::vector<std::pair<pid_t, const telemetry::HotnessSource*>> SamplingSources::running() const {
  std::vector<std::pair<pid_t, const telemetry::HotnessSource*>> out;
  for (const auto& [pid, slot] : slots_)
    if (slot.source) out.emplace_back(pid, slot.source.get());
  return out;
}

}  // namespace tierd::daemon

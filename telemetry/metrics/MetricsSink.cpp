#include "telemetry/metrics/MetricsSink.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tierd/core/Numbers.h"

namespace tierd::telemetry {

namespace {

LabelValues toValues(std::initializer_list<std::string_view> labels) {
  LabelValues v;
  v.reserve(labels.size());
  for (auto s : labels)
    v.emplace_back(s);
  return v;
}

bool isNodeId(const std::string& s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  if (s.find_first_not_of("0123456789") != std::string::npos) return false;
  return parseU64InRange(s, 0, static_cast<uint64_t>(kMaxNodeId), "node").ok();
}

}  // namespace

std::string MetricsSink::checkLabels(const MetricDef& def, const LabelValues& labels) const {
  if (labels.size() != def.labels.size())
    return def.name + ": expected " + std::to_string(def.labels.size()) + " label values, got " +
           std::to_string(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    const LabelDef& l = def.labels[i];
    const std::string& v = labels[i];
    bool ok = false;
    switch (l.domain) {
      case LabelDomain::Fixed:
        ok = std::find(l.values.begin(), l.values.end(), v) != l.values.end();
        break;
      case LabelDomain::Workload:
        ok = workloads_.count(v) != 0;
        break;
      case LabelDomain::Node:
        ok = isNodeId(v);
        break;
      case LabelDomain::MetricName:
        ok = findMetric(v) != nullptr;
        break;
      case LabelDomain::Build: {
        auto b = buildInfoLabels();
        ok = i < b.size() && b[i] == v;
        break;
      }
    }
    if (!ok) return def.name + ": label " + l.name + "=\"" + v + "\" is not an allowed value";
  }
  return "";
}

bool MetricsSink::accept(const MetricDef& def, const LabelValues& labels, double value,
                         bool nonNegative) {
  std::string why = checkLabels(def, labels);
  if (why.empty() && !std::isfinite(value)) why = def.name + ": value is not finite";
  if (why.empty() && nonNegative && value < 0)
    why = def.name + ": negative counter delta " + std::to_string(value);
  if (why.empty()) return true;
  ++rejected_;
  lastRejection_ = why;
  doAdd(metricDef(MetricId::MetricsRejectedUpdates), {def.name}, 1);
  return false;
}

bool MetricsSink::add(CounterHandle h, const LabelValues& labels, double delta) {
  const MetricDef& def = metricDef(h.id);
  if (!accept(def, labels, delta, true)) return false;
  doAdd(def, labels, delta);
  return true;
}
bool MetricsSink::set(GaugeHandle h, const LabelValues& labels, double value) {
  const MetricDef& def = metricDef(h.id);
  if (!accept(def, labels, value, false)) return false;
  doSet(def, labels, value);
  return true;
}
bool MetricsSink::observe(HistogramHandle h, const LabelValues& labels, double value) {
  const MetricDef& def = metricDef(h.id);
  if (!accept(def, labels, value, false)) return false;
  doObserve(def, labels, value);
  return true;
}
bool MetricsSink::declare(HistogramHandle h, std::initializer_list<std::string_view> labels) {
  const MetricDef& def = metricDef(h.id);
  const LabelValues values = toValues(labels);
  if (!accept(def, values, 0, false)) return false;
  doDeclare(def, values);
  return true;
}
bool MetricsSink::add(CounterHandle h, std::initializer_list<std::string_view> labels,
                      double delta) {
  return add(h, toValues(labels), delta);
}
bool MetricsSink::set(GaugeHandle h, std::initializer_list<std::string_view> labels, double value) {
  return set(h, toValues(labels), value);
}
bool MetricsSink::observe(HistogramHandle h, std::initializer_list<std::string_view> labels,
                          double value) {
  return observe(h, toValues(labels), value);
}

void MetricsSink::setWorkloads(const std::vector<std::string>& names) {
  workloads_ = std::set<std::string>(names.begin(), names.end());
  removeWorkloadSeries(workloads_);
}

// ---- RecordingSink

RecordingSink::Series* RecordingSink::find(std::string_view metric, const LabelValues& labels) {
  for (auto& [key, s] : series_)
    if (key.first == metric && key.second == labels) return &s;
  return nullptr;
}
const RecordingSink::Series* RecordingSink::find(std::string_view metric,
                                                 const LabelValues& labels) const {
  for (const auto& [key, s] : series_)
    if (key.first == metric && key.second == labels) return &s;
  return nullptr;
}

void RecordingSink::doAdd(const MetricDef& def, const LabelValues& labels, double delta) {
  updates_.push_back({Op::Add, def.name, labels, delta});
  Series* s = find(def.name, labels);
  if (!s) s = &series_.emplace_back(std::make_pair(def.name, labels), Series{}).second;
  s->value += delta;
}
void RecordingSink::doSet(const MetricDef& def, const LabelValues& labels, double value) {
  updates_.push_back({Op::Set, def.name, labels, value});
  Series* s = find(def.name, labels);
  if (!s) s = &series_.emplace_back(std::make_pair(def.name, labels), Series{}).second;
  s->value = value;
}
void RecordingSink::doObserve(const MetricDef& def, const LabelValues& labels, double value) {
  updates_.push_back({Op::Observe, def.name, labels, value});
  Series* s = find(def.name, labels);
  if (!s) s = &series_.emplace_back(std::make_pair(def.name, labels), Series{}).second;
  s->value += value;
  s->count += 1;
}
void RecordingSink::doDeclare(const MetricDef& def, const LabelValues& labels) {
  updates_.push_back({Op::Declare, def.name, labels, 0});
  if (!find(def.name, labels)) series_.emplace_back(std::make_pair(def.name, labels), Series{});
}
void RecordingSink::removeWorkloadSeries(const std::set<std::string>& keep) {
  std::erase_if(series_, [&](const auto& entry) {
    const MetricDef* def = findMetric(entry.first.first);
    if (!def) return false;
    for (size_t i = 0; i < def->labels.size(); ++i)
      if (def->labels[i].domain == LabelDomain::Workload && !keep.count(entry.first.second[i]))
        return true;
    return false;
  });
}

double RecordingSink::value(std::string_view metric, const LabelValues& labels) const {
  const Series* s = find(metric, labels);
  return s ? s->value : 0;
}
uint64_t RecordingSink::count(std::string_view metric, const LabelValues& labels) const {
  const Series* s = find(metric, labels);
  return s ? s->count : 0;
}
bool RecordingSink::has(std::string_view metric, const LabelValues& labels) const {
  return find(metric, labels) != nullptr;
}
size_t RecordingSink::seriesCount(std::string_view metric) const {
  size_t n = 0;
  for (const auto& [key, s] : series_)
    if (key.first == metric) ++n;
  return n;
}
std::string RecordingSink::log() const {
  std::ostringstream o;
  for (const auto& u : updates_) {
    o << (u.op == Op::Add       ? "add "
          : u.op == Op::Set     ? "set "
          : u.op == Op::Observe ? "observe "
                                : "declare ")
      << u.metric << "{";
    for (size_t i = 0; i < u.labels.size(); ++i)
      o << (i ? "," : "") << u.labels[i];
    o << "} " << u.value << "\n";
  }
  return o.str();
}

// ---- VmstatDeltas

VmstatDeltas::VmstatDeltas() : VmstatDeltas(metric::kKernelVmstatEvents, vmstatCounterNames()) {}

VmstatDeltas::VmstatDeltas(CounterHandle metric, std::vector<std::string> names)
    : metric_(metric), names_(std::move(names)) {}

void VmstatDeltas::update(const std::map<std::string, int64_t>& vmstat, MetricsSink& sink) {
  const auto& names = names_;
  std::vector<std::pair<std::string, int64_t>> next;
  for (const auto& [key, value] : vmstat) {
    if (std::find(names.begin(), names.end(), key) == names.end()) continue;
    next.emplace_back(key, value);
    auto prev = std::find_if(last_.begin(), last_.end(),
                             [&name = key](const auto& p) { return p.first == name; });
    double delta = 0;
    if (prev != last_.end() && value >= prev->second) delta = double(value - prev->second);
    sink.add(metric_, {key}, delta);
  }
  last_ = std::move(next);
}

}  // namespace tierd::telemetry

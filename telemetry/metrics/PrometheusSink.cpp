#include "telemetry/metrics/PrometheusSink.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <algorithm>
#include <sstream>
#include <variant>

#include "telemetry/metrics/ProcessMetrics.h"
#include "tierd/core/FileSafety.h"
#include "tierd/core/Numbers.h"

namespace tierd::telemetry {

namespace {

using FamilyPtr =
    std::variant<prometheus::Family<prometheus::Counter>*, prometheus::Family<prometheus::Gauge>*,
                 prometheus::Family<prometheus::Histogram>*>;

prometheus::Labels toPromLabels(const MetricDef& def, const LabelValues& values) {
  prometheus::Labels l;
  for (size_t i = 0; i < def.labels.size(); ++i)
    l[def.labels[i].name] = values[i];
  return l;
}

// The registry's families in catalog order, with an empty family (HELP and TYPE only) for every
// catalog metric that has no series yet: prometheus-cpp leaves those out, and a dashboard or an
// alert should see that tierd exports the family before the first event happens.
class CatalogCollectable : public prometheus::Collectable {
 public:
  explicit CatalogCollectable(std::shared_ptr<prometheus::Registry> registry)
      : registry_(std::move(registry)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> collected = registry_->Collect();
    std::vector<prometheus::MetricFamily> out;
    out.reserve(catalog().size());
    for (const MetricDef& def : catalog()) {
      auto it = std::find_if(collected.begin(), collected.end(),
                             [&](const prometheus::MetricFamily& f) { return f.name == def.name; });
      if (it != collected.end()) {
        out.push_back(std::move(*it));
        collected.erase(it);
        continue;
      }
      prometheus::MetricFamily f;
      f.name = def.name;
      f.help = def.help;
      f.type = def.type == MetricType::Counter ? prometheus::MetricType::Counter
               : def.type == MetricType::Gauge ? prometheus::MetricType::Gauge
                                               : prometheus::MetricType::Histogram;
      out.push_back(std::move(f));
    }
    for (auto& f : collected)
      out.push_back(std::move(f));
    return out;
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
};

}  // namespace

struct PrometheusSink::Families {
  std::vector<FamilyPtr> byId;
};

Result<BasicAuthCredentials> readBasicAuthFile(const std::string& path) {
  auto text = readPrivateFile(path);
  if (!text) return text.error().within("metrics basic auth file");
  std::string line = text.value();
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
    line.pop_back();
  if (line.find('\n') != std::string::npos)
    return Error::input("expected exactly one line \"user:password\"", path);
  auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == line.size())
    return Error::input("expected \"user:password\" with a non-empty user and password", path);
  return BasicAuthCredentials{line.substr(0, colon), line.substr(colon + 1)};
}

Result<std::pair<std::string, int>> parseListenAddress(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Error::input(
        "expected HOST:PORT such as 127.0.0.1:9464 or [::1]:9464, got '" + address + "'",
        "metrics listen address");
  std::string host = address.substr(0, colon);
  std::string portText = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, host.c_str(), &a6) != 1)
      return Error::input("'" + host + "' is not a numeric IPv6 address", "metrics listen address");
  } else {
    in_addr a4{};
    if (inet_pton(AF_INET, host.c_str(), &a4) != 1)
      return Error::input("'" + host + "' is not a numeric IPv4 address (write IPv6 as [::1])",
                          "metrics listen address");
  }
  const bool digits = portText.find_first_not_of("0123456789") == std::string::npos;
  auto port = parseU64InRange(portText, 0, 65535, "port");
  if (!digits || !port)
    return Error::input("port '" + portText + "' is not a number in 0..65535",
                        "metrics listen address");
  return std::make_pair(host, static_cast<int>(*port));
}

PrometheusSink::PrometheusSink()
    : registry_(std::make_shared<prometheus::Registry>()),
      exposed_(std::make_shared<CatalogCollectable>(registry_)),
      families_(std::make_unique<Families>()) {
  for (const auto& def : catalog()) {
    switch (def.type) {
      case MetricType::Counter:
        families_->byId.emplace_back(
            &prometheus::BuildCounter().Name(def.name).Help(def.help).Register(*registry_));
        break;
      case MetricType::Gauge:
        families_->byId.emplace_back(
            &prometheus::BuildGauge().Name(def.name).Help(def.help).Register(*registry_));
        break;
      case MetricType::Histogram:
        families_->byId.emplace_back(
            &prometheus::BuildHistogram().Name(def.name).Help(def.help).Register(*registry_));
        break;
    }
  }
  set(metric::kBuildInfo, buildInfoLabels(), 1);
}

PrometheusSink::~PrometheusSink() = default;

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::start(const ExporterOptions& options,
                                                              MetricsHttpServer::Health health) {
  auto hp = parseListenAddress(options.listenAddress);
  if (!hp) return hp.error();
  std::optional<BasicAuthCredentials> creds;
  if (!options.basicAuthFile.empty()) {
    auto c = readBasicAuthFile(options.basicAuthFile);
    if (!c) return c.error();
    creds = c.value();
  }
  auto sink = std::make_unique<PrometheusSink>();
  PrometheusSink* self = sink.get();
  auto server = MetricsHttpServer::start(
      hp->first, hp->second, options.listenAddress, std::move(creds),
      [self] { return self->render() + processMetricsText(); }, options.limits, std::move(health));
  if (!server) return server.error();
  sink->server_ = std::move(server.value());
  return sink;
}

int PrometheusSink::port() const {
  return server_ ? server_->port() : 0;
}

std::string PrometheusSink::render() const {
  prometheus::TextSerializer s;
  std::ostringstream o;
  s.Serialize(o, exposed_->Collect());
  return o.str();
}

void* PrometheusSink::series(const MetricDef& def, const LabelValues& labels) {
  size_t idx = static_cast<size_t>(def.id);
  auto key = std::make_pair(idx, labels);
  auto it = series_.find(key);
  if (it != series_.end()) return it->second;
  void* p = std::visit(
      [&](auto* family) -> void* {
        using F = std::remove_pointer_t<decltype(family)>;
        if constexpr (std::is_same_v<F, prometheus::Family<prometheus::Histogram>>)
          return &family->Add(toPromLabels(def, labels),
                              prometheus::Histogram::BucketBoundaries(def.buckets));
        else
          return &family->Add(toPromLabels(def, labels));
      },
      families_->byId[idx]);
  series_.emplace(key, p);
  return p;
}

void PrometheusSink::doAdd(const MetricDef& def, const LabelValues& labels, double delta) {
  static_cast<prometheus::Counter*>(series(def, labels))->Increment(delta);
}
void PrometheusSink::doSet(const MetricDef& def, const LabelValues& labels, double value) {
  static_cast<prometheus::Gauge*>(series(def, labels))->Set(value);
}
void PrometheusSink::doObserve(const MetricDef& def, const LabelValues& labels, double value) {
  static_cast<prometheus::Histogram*>(series(def, labels))->Observe(value);
}

void PrometheusSink::doDeclare(const MetricDef& def, const LabelValues& labels) {
  series(def, labels);
}

void PrometheusSink::removeWorkloadSeries(const std::set<std::string>& keep) {
  for (auto it = series_.begin(); it != series_.end();) {
    const MetricDef& def = catalog()[it->first.first];
    bool drop = false;
    for (size_t i = 0; i < def.labels.size(); ++i)
      if (def.labels[i].domain == LabelDomain::Workload && !keep.count(it->first.second[i]))
        drop = true;
    if (!drop) {
      ++it;
      continue;
    }
    void* p = it->second;
    std::visit(
        [&](auto* family) {
          using F = std::remove_pointer_t<decltype(family)>;
          if constexpr (std::is_same_v<F, prometheus::Family<prometheus::Counter>>)
            family->Remove(static_cast<prometheus::Counter*>(p));
          else if constexpr (std::is_same_v<F, prometheus::Family<prometheus::Gauge>>)
            family->Remove(static_cast<prometheus::Gauge*>(p));
          else
            family->Remove(static_cast<prometheus::Histogram*>(p));
        },
        families_->byId[it->first.first]);
    it = series_.erase(it);
  }
}

}  // namespace tierd::telemetry

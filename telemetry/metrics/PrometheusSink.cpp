#include "telemetry/metrics/PrometheusSink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <variant>

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

// Compares without an early exit so the time taken does not reveal the matching prefix.
bool constantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
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

namespace {

// Binds (and closes) a socket like civetweb will, to report the real errno (EADDRINUSE,
// EADDRNOTAVAIL, EACCES) instead of civetweb's generic exception text.
Status probeBind(const std::string& host, int port, const std::string& address) {
  bool v6 = host.find(':') != std::string::npos;
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return Error::fromErrno("cannot create a socket", "metrics listen address " + address);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, host.c_str(), &sa.sin6_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  int err = errno;
  ::close(fd);
  if (rc == 0) return Ok{};
  std::string hint = err == EADDRINUSE
                         ? "another process (or another tierd) already listens there; "
                           "stop it or set another metrics listen address"
                     : err == EADDRNOTAVAIL ? "no interface of this host has that address"
                                            : "cannot listen there";
  Error e = Error::sys(err, hint, "metrics listen address " + address);
  e.kind = ErrorKind::Environment;
  return e;
}

}  // namespace

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

Result<std::unique_ptr<PrometheusSink>> PrometheusSink::start(const ExporterOptions& options) {
  auto hp = parseListenAddress(options.listenAddress);
  if (!hp) return hp.error();
  std::optional<BasicAuthCredentials> creds;
  if (!options.basicAuthFile.empty()) {
    auto c = readBasicAuthFile(options.basicAuthFile);
    if (!c) return c.error();
    creds = c.value();
  }
  auto probe = probeBind(hp->first, hp->second, options.listenAddress);
  if (!probe) return probe.error();

  auto sink = std::make_unique<PrometheusSink>();
  try {
    std::string ports = hp->first.find(':') != std::string::npos
                            ? "[" + hp->first + "]:" + std::to_string(hp->second)
                            : hp->first + ":" + std::to_string(hp->second);
    sink->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", ports, "num_threads", std::to_string(options.threads)});
    if (creds) {
      auto c = *creds;
      sink->exposer_->RegisterAuth(
          [c](const std::string& user, const std::string& password) {
            bool u = constantTimeEquals(user, c.user);
            bool p = constantTimeEquals(password, c.password);
            return u && p;
          },
          "tierd");
    }
    sink->exposer_->RegisterCollectable(sink->exposed_);
  } catch (const std::exception& e) {
    return Error::env(std::string("the metrics exporter could not start: ") + e.what() +
                          " (is the address in use?)",
                      "metrics listen address " + options.listenAddress);
  }
  return sink;
}

int PrometheusSink::port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
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

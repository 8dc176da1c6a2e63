// Checks every PromQL expression of dashboards/*.json against the metric catalog: each metric
// name exists (histograms through _bucket/_sum/_count), each label in a matcher belongs to that
// metric, fixed-value labels are matched against allowed values, and every label in by()/
// without() belongs to a metric of the expression. The real-Prometheus test
// (tests/integration/dashboards_prometheus_test.py) then evaluates them against an exporter.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/metrics/Catalog.h"

using namespace tierd::telemetry;

namespace {

const std::string kDashboards = std::string(TIERD_SOURCE_DIR) + "/dashboards";

struct Resolved {
  const MetricDef* def = nullptr;
  std::string suffix;  // "", "_bucket", "_sum", "_count"
};

Resolved resolve(const std::string& name) {
  if (const MetricDef* d = findMetric(name)) return {d, ""};
  for (const char* s : {"_bucket", "_sum", "_count"}) {
    std::string suf = s;
    if (name.size() > suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0) {
      const MetricDef* d = findMetric(name.substr(0, name.size() - suf.size()));
      if (d && d->type == MetricType::Histogram) return {d, suf};
    }
  }
  return {};
}

bool hasLabel(const Resolved& r, const std::string& label) {
  if (label == "le") return r.suffix == "_bucket";
  if (label == "instance" || label == "job") return true;  // Prometheus's target labels
  for (const auto& l : r.def->labels)
    if (l.name == label) return true;
  return false;
}

// Grafana variables replaced the way the real-Prometheus test does.
std::string substitute(std::string expr) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"$__rate_interval", "1m"},
                          {"${workload}", "redis"},
                          {"$instance", ".*"},
                          {"$workload", "redis"}}) {
    for (size_t p; (p = expr.find(from)) != std::string::npos;)
      expr.replace(p, from.size(), to);
  }
  return expr;
}

}  // namespace

/// Problems found in one PromQL expression; empty when it only uses catalog metrics and labels.
std::vector<std::string> checkPromql(const std::string& rawExpr) {
  std::vector<std::string> problems;
  const std::string expr = substitute(rawExpr);
  std::vector<Resolved> used;
  bool anyTierd = false;
  const std::regex metricRe("\\b(tierd_[a-zA-Z0-9_]+)\\s*(\\{([^}]*)\\})?");
  const std::regex matcherRe("\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"([^\"]*)\"\\s*,?");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metricRe);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    anyTierd = true;
    Resolved r = resolve(name);
    if (!r.def) {
      problems.push_back("unknown metric " + name);
      continue;
    }
    if (r.def->type == MetricType::Histogram && r.suffix.empty())
      problems.push_back("histogram " + name + " used without _bucket/_sum/_count");
    used.push_back(r);
    const std::string matchers = (*it)[3];
    for (auto m = std::sregex_iterator(matchers.begin(), matchers.end(), matcherRe);
         m != std::sregex_iterator(); ++m) {
      const std::string label = (*m)[1], op = (*m)[2], value = (*m)[3];
      if (!hasLabel(r, label)) {
        problems.push_back(name + " has no label " + label);
        continue;
      }
      if (op != "=" && op != "!=") continue;
      for (const auto& l : r.def->labels)
        if (l.name == label && l.domain == LabelDomain::Fixed &&
            std::find(l.values.begin(), l.values.end(), value) == l.values.end())
          problems.push_back(name + ": " + label + "=\"" + value + "\" is not an allowed value");
    }
  }
  if (!anyTierd) problems.push_back("no tierd metric in expression");
  const std::regex groupRe("\\b(by|without)\\s*\\(([^)]*)\\)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), groupRe);
       it != std::sregex_iterator(); ++it) {
    std::stringstream ss((*it)[2].str());
    for (std::string label; std::getline(ss, label, ',');) {
      label.erase(std::remove_if(label.begin(), label.end(), ::isspace), label.end());
      if (label.empty() || label == "instance" || label == "job") continue;
      bool any = std::any_of(used.begin(), used.end(),
                             [&](const Resolved& r) { return hasLabel(r, label); });
      if (!any) problems.push_back("grouping label " + label + " belongs to no metric used");
    }
  }
  return problems;
}

namespace {

nlohmann::json loadDashboard(const std::string& name) {
  std::ifstream in(kDashboards + "/" + name);
  REQUIRE_MESSAGE(in.good(), "missing dashboards/" << name);
  return nlohmann::json::parse(in);
}

void collectExprs(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "expr" && it.value().is_string())
        out.push_back(it.value().get<std::string>());
      else
        collectExprs(it.value(), out);
    }
  } else if (j.is_array()) {
    for (const auto& e : j)
      collectExprs(e, out);
  }
}

}  // namespace

TEST_CASE("the PromQL checker catches unknown metrics, labels and values") {
  CHECK(checkPromql("sum by (direction) (rate(tierd_migrate_bytes_total{result=\"moved\"}[5m]))")
            .empty());
  CHECK(checkPromql("histogram_quantile(0.9, sum by (le) (rate("
                    "tierd_migrate_call_duration_seconds_bucket[$__rate_interval])))")
            .empty());
  CHECK(checkPromql("rate(tierd_migrate_byte_total[5m])") ==
        std::vector<std::string>{"unknown metric tierd_migrate_byte_total"});
  CHECK(checkPromql("tierd_migrate_call_duration_seconds") ==
        std::vector<std::string>{
            "histogram tierd_migrate_call_duration_seconds used without _bucket/_sum/_count"});
  CHECK(checkPromql("tierd_node_capacity_bytes_sum") ==
        std::vector<std::string>{"unknown metric tierd_node_capacity_bytes_sum"});
  CHECK(checkPromql("tierd_hotness_hot_bytes{pid=\"1\"}") ==
        std::vector<std::string>{"tierd_hotness_hot_bytes has no label pid"});
  CHECK(checkPromql("tierd_hotness_hot_bytes{tier=\"dram\"}") ==
        std::vector<std::string>{"tierd_hotness_hot_bytes: tier=\"dram\" is not an allowed value"});
  CHECK(checkPromql("sum by (host) (tierd_node_used_bytes)") ==
        std::vector<std::string>{"grouping label host belongs to no metric used"});
  CHECK(checkPromql("up") == std::vector<std::string>{"no tierd metric in expression"});
}

TEST_CASE("every dashboard expression uses catalog metrics and labels") {
  size_t total = 0;
  for (const char* file : {"tierd-overview.json", "tierd-workload.json"}) {
    auto dash = loadDashboard(file);
    std::vector<std::string> exprs;
    collectExprs(dash, exprs);
    CHECK(exprs.size() >= 8);
    total += exprs.size();
    for (const auto& e : exprs) {
      INFO(file << ": " << e);
      CHECK(checkPromql(e) == std::vector<std::string>{});
    }
  }
  CHECK(total > 0);
}

TEST_CASE("the workload dashboard's $workload variable comes from a catalog workload label") {
  auto dash = loadDashboard("tierd-workload.json");
  bool found = false;
  for (const auto& v : dash["templating"]["list"]) {
    if (v["name"] != "workload") continue;
    found = true;
    const std::string q = v["query"]["query"].get<std::string>();
    std::smatch m;
    REQUIRE(std::regex_match(q, m, std::regex("label_values\\((\\w+), (\\w+)\\)")));
    const MetricDef* d = findMetric(m[1].str());
    REQUIRE(d);
    CHECK(std::any_of(d->labels.begin(), d->labels.end(), [&](const LabelDef& l) {
      return l.name == m[2].str() && l.domain == LabelDomain::Workload;
    }));
  }
  CHECK(found);
}

TEST_CASE("each dashboard has an $instance variable and every tierd selector is filtered by it") {
  const std::regex selector("\\b(tierd_[a-zA-Z0-9_]+)(\\{([^}]*)\\})?");
  for (const char* file : {"tierd-overview.json", "tierd-workload.json"}) {
    INFO(file);
    auto dash = loadDashboard(file);
    bool found = false;
    for (const auto& v : dash["templating"]["list"]) {
      if (v["name"] != "instance") continue;
      found = true;
      CHECK(v["query"]["query"] == "label_values(tierd_build_info, instance)");
      CHECK(v["multi"] == true);
      CHECK(v["includeAll"] == true);
      CHECK(v["allValue"] == ".*");
    }
    CHECK(found);
    std::vector<std::string> exprs;
    collectExprs(dash, exprs);
    for (const auto& e : exprs)
      for (auto it = std::sregex_iterator(e.begin(), e.end(), selector);
           it != std::sregex_iterator(); ++it) {
        INFO(e);
        CHECK((*it)[3].str().find("instance=~\"$instance\"") != std::string::npos);
      }
  }
}

TEST_CASE("each panel has one unit: no override gives a series another one") {
  for (const char* file : {"tierd-overview.json", "tierd-workload.json"}) {
    auto dash = loadDashboard(file);
    for (const auto& p : dash["panels"]) {
      if (p["type"] == "row") continue;
      INFO(file << ": " << p.value("title", "?"));
      CHECK(p["fieldConfig"]["defaults"]["unit"].is_string());
      for (const auto& o : p["fieldConfig"].value("overrides", nlohmann::json::array()))
        for (const auto& prop : o["properties"])
          CHECK(prop["id"] != "unit");
    }
  }
}

TEST_CASE("the overview dashboard covers its required panels") {
  auto dash = loadDashboard("tierd-overview.json");
  std::vector<std::string> exprs;
  collectExprs(dash, exprs);
  auto uses = [&](const std::string& metric) {
    return std::any_of(exprs.begin(), exprs.end(),
                       [&](const std::string& e) { return e.find(metric) != std::string::npos; });
  };
  for (const char* m :
       {"tierd_migrate_bytes_total", "tierd_migrate_system_cpu_seconds_total",
        "tierd_hotness_hot_bytes", "tierd_node_capacity_bytes", "tierd_daemon_errors_total",
        "tierd_sampler_lost_samples_total", "tierd_kernel_vmstat_events_total",
        "tierd_daemon_ticks_total", "tierd_daemon_last_tick_timestamp_seconds"}) {
    INFO(m);
    CHECK(uses(m));
  }
}

TEST_CASE("dashboards are well-formed Grafana JSON: unique ids, gridPos, refIds, datasource") {
  for (const char* file : {"tierd-overview.json", "tierd-workload.json"}) {
    INFO(file);
    auto dash = loadDashboard(file);
    CHECK(dash["uid"].is_string());
    CHECK(dash["title"].is_string());
    CHECK(dash["schemaVersion"].is_number_integer());
    std::set<int> ids;
    for (const auto& p : dash["panels"]) {
      INFO(p.value("title", "?"));
      REQUIRE(p["id"].is_number_integer());
      CHECK(ids.insert(p["id"].get<int>()).second);
      for (const char* k : {"x", "y", "w", "h"})
        CHECK(p["gridPos"][k].is_number_integer());
      CHECK(p["gridPos"]["x"].get<int>() + p["gridPos"]["w"].get<int>() <= 24);
      if (p["type"] == "row") continue;
      REQUIRE(p["targets"].is_array());
      CHECK_FALSE(p["targets"].empty());
      std::set<std::string> refs;
      for (const auto& t : p["targets"]) {
        CHECK(refs.insert(t["refId"].get<std::string>()).second);
        CHECK(t["datasource"]["uid"] == "${datasource}");
      }
    }
    bool dsVar = false;
    for (const auto& v : dash["templating"]["list"])
      if (v["name"] == "datasource" && v["type"] == "datasource") dsVar = true;
    CHECK(dsVar);
  }
}

#include <doctest/doctest.h>

#include <cerrno>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "telemetry/metrics/Catalog.h"

using namespace tierd::telemetry;

TEST_CASE("catalog is indexed by MetricId and covers every id") {
  const auto& c = catalog();
  REQUIRE(c.size() == static_cast<size_t>(MetricId::Count));
  for (size_t i = 0; i < c.size(); ++i)
    CHECK(static_cast<size_t>(c[i].id) == i);
}

TEST_CASE("catalog names follow tierd_<subsystem>_<what>_<unit> and counters end in _total") {
  const std::regex shape("^tierd_[a-z]+_[a-z0-9_]+$");
  std::set<std::string> names;
  for (const auto& m : catalog()) {
    INFO(m.name);
    CHECK(std::regex_match(m.name, shape));
    CHECK(names.insert(m.name).second);
    bool total = m.name.size() > 6 && m.name.substr(m.name.size() - 6) == "_total";
    CHECK(total == (m.type == MetricType::Counter));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      std::string s = suffix;
      CHECK_FALSE((m.name.size() > s.size() && m.name.substr(m.name.size() - s.size()) == s));
    }
    CHECK_FALSE(m.help.empty());
    CHECK_FALSE(m.unit.empty());
    if (m.type == MetricType::Histogram) {
      REQUIRE_FALSE(m.buckets.empty());
      for (size_t i = 1; i < m.buckets.size(); ++i)
        CHECK(m.buckets[i - 1] < m.buckets[i]);
    } else {
      CHECK(m.buckets.empty());
    }
  }
}

TEST_CASE("catalog labels are bounded and never per-host or per-process") {
  const std::set<std::string> forbidden = {"host", "hostname", "instance", "job", "pid",
                                           "tid",  "path",     "cgroup",   "le",  "quantile"};
  for (const auto& m : catalog()) {
    std::set<std::string> seen;
    for (const auto& l : m.labels) {
      INFO(m.name << " label " << l.name);
      CHECK(forbidden.count(l.name) == 0);
      CHECK(seen.insert(l.name).second);
      CHECK_FALSE(l.help.empty());
      if (l.domain == LabelDomain::Fixed) {
        CHECK_FALSE(l.values.empty());
        CHECK(std::set<std::string>(l.values.begin(), l.values.end()).size() == l.values.size());
      } else {
        CHECK(l.values.empty());
      }
    }
  }
}

TEST_CASE("catalog includes the families the dashboards and docs rely on") {
  for (const char* name :
       {"tierd_migrate_bytes_total", "tierd_migrate_pages_total",
        "tierd_migrate_call_duration_seconds", "tierd_daemon_errors_total",
        "tierd_daemon_cpu_seconds_total", "tierd_sampler_samples_total",
        "tierd_sampler_lost_samples_total", "tierd_sampler_overhead_ratio",
        "tierd_sampler_period_events", "tierd_hotness_hot_bytes", "tierd_hotness_cold_bytes",
        "tierd_node_capacity_bytes", "tierd_node_used_bytes", "tierd_node_hugetlb_pages",
        "tierd_arbiter_pingpong_moves_total", "tierd_config_reloads_total",
        "tierd_kernel_capability_available", "tierd_kernel_vmstat_events_total",
        "tierd_build_info"}) {
    INFO(name);
    CHECK(findMetric(name) != nullptr);
  }
  CHECK(findMetric("tierd_no_such_metric") == nullptr);
  const MetricDef* bytes = findMetric("tierd_migrate_bytes_total");
  REQUIRE(bytes);
  REQUIRE(bytes->labels.size() == 3);
  CHECK(bytes->labels[0].name == "direction");
  CHECK(bytes->labels[1].name == "page_size");
  CHECK(bytes->labels[2].name == "result");
}

TEST_CASE("vmstat counters are the kernel's migration, promotion and demotion keys") {
  for (const auto& n : vmstatCounterNames()) {
    INFO(n);
    CHECK(std::regex_match(n, std::regex("^(pgmigrate_|pgpromote_|pgdemote_|thp_migration_|"
                                         "numa_pages_migrated).*")));
  }
}

TEST_CASE("label helpers map into the fixed sets") {
  CHECK(errnoLabel(EBUSY) == "EBUSY");
  CHECK(errnoLabel(-ENOMEM) == "ENOMEM");
  CHECK(errnoLabel(EXDEV) == "other");
  CHECK(pageSizeLabel(4096) == "4k");
  CHECK(pageSizeLabel(2u << 20) == "2M");
  CHECK(pageSizeLabel(1u << 30) == "1G");
  CHECK(pageSizeLabel(8192) == "other");
  CHECK(directionLabel(tierd::Direction::Promote) == "promote");
  CHECK(directionLabel(tierd::Direction::Demote) == "demote");
  // every helper output is an allowed value of its label
  const auto& errnos = findMetric("tierd_daemon_errors_total")->labels[1].values;
  for (int e : {EBUSY, ENOMEM, EFAULT, EACCES, EPERM, ENOENT, EINVAL, ESRCH, EAGAIN, EIO, EXDEV})
    CHECK(std::find(errnos.begin(), errnos.end(), errnoLabel(e)) != errnos.end());
}

TEST_CASE("docs/metrics.md is the generated catalog") {
  const std::string path = std::string(TIERD_SOURCE_DIR) + "/docs/metrics.md";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string expected = catalogMarkdown();
  INFO(
      "docs/metrics.md is stale: regenerate with "
      "`build/bin/tierctl metrics --catalog --markdown > docs/metrics.md`");
  CHECK(ss.str() == expected);
}

TEST_CASE("catalog JSON lists every metric with its labels") {
  const std::string json = catalogJson();
  for (const auto& m : catalog())
    CHECK(json.find("\"" + m.name + "\"") != std::string::npos);
}

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "telemetry/metrics/PrometheusSink.h"
#include "tests/unit/support/HttpGet.h"

using namespace tierd::telemetry;

namespace {

using tierd::testing::httpGet;

std::string tempFile(const std::string& content, mode_t mode) {
  char name[] = "/tmp/tierd-auth-XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  ::close(fd);
  REQUIRE(::chmod(name, mode) == 0);
  return name;
}

}  // namespace

TEST_CASE("listen addresses are parsed strictly") {
  auto a = parseListenAddress("127.0.0.1:9464");
  REQUIRE(a.ok());
  CHECK(a->first == "127.0.0.1");
  CHECK(a->second == 9464);
  auto b = parseListenAddress("[::1]:0");
  REQUIRE(b.ok());
  CHECK(b->first == "::1");
  CHECK_FALSE(parseListenAddress("localhost:9464").ok());
  CHECK_FALSE(parseListenAddress("127.0.0.1").ok());
  CHECK_FALSE(parseListenAddress("127.0.0.1:99999").ok());
  CHECK_FALSE(parseListenAddress("127.0.0.1:9x").ok());
  CHECK_FALSE(parseListenAddress("::1:9464").ok());
}

TEST_CASE("a listen port of 25 digits is an Input error, not an exception") {
  auto r = parseListenAddress("127.0.0.1:1234567890123456789012345");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == tierd::ErrorKind::Input);
  CHECK(r.error().message == "port '1234567890123456789012345' is not a number in 0..65535");
  CHECK(parseListenAddress("127.0.0.1:65535")->second == 65535);
  CHECK_FALSE(parseListenAddress("127.0.0.1:").ok());
}

TEST_CASE("render() holds the families that have series, in the text format") {
  PrometheusSink s;
  s.setWorkloads({"redis"});
  CHECK(s.add(metric::kMigrateBytes, {"promote", "2M", "moved"}, 2097152));
  CHECK(s.observe(metric::kMigrateCallDuration, {"promote"}, 0.003));
  CHECK(s.set(metric::kHotnessHotBytes, {"redis", "fast"}, 42));
  const std::string text = s.render();
  for (const char* m :
       {"tierd_migrate_bytes_total counter", "tierd_migrate_call_duration_seconds histogram",
        "tierd_hotness_hot_bytes gauge", "tierd_build_info gauge"}) {
    INFO(m);
    CHECK(text.find(std::string("# TYPE ") + m) != std::string::npos);
  }
  // A family without series is served as its HELP and TYPE lines only.
  CHECK(text.find("# TYPE tierd_node_used_bytes gauge\n") != std::string::npos);
  CHECK(text.find("tierd_node_used_bytes{") == std::string::npos);
  CHECK(text.find(
            "tierd_migrate_bytes_total{direction=\"promote\",page_size=\"2M\",result=\"moved\"} "
            "2097152") != std::string::npos);
  CHECK(text.find(
            "tierd_migrate_call_duration_seconds_bucket{direction=\"promote\",le=\"0.005\"} 1") !=
        std::string::npos);
  CHECK(text.find(
            "tierd_migrate_call_duration_seconds_bucket{direction=\"promote\",le=\"0.0025\"} 0") !=
        std::string::npos);
  CHECK(text.find("tierd_hotness_hot_bytes{tier=\"fast\",workload=\"redis\"} 42") !=
        std::string::npos);
  CHECK(text.find("tierd_build_info{version=\"") != std::string::npos);
  // A declared histogram is served with count 0 and empty buckets; declaring again keeps data.
  CHECK(s.declare(metric::kMigrateCallDuration, {"demote"}));
  CHECK(s.declare(metric::kMigrateCallDuration, {"promote"}));
  const std::string declared = s.render();
  CHECK(declared.find("tierd_migrate_call_duration_seconds_count{direction=\"demote\"} 0") !=
        std::string::npos);
  CHECK(declared.find(
            "tierd_migrate_call_duration_seconds_bucket{direction=\"demote\",le=\"+Inf\"} 0") !=
        std::string::npos);
  CHECK(declared.find("tierd_migrate_call_duration_seconds_count{direction=\"promote\"} 1") !=
        std::string::npos);
  s.setWorkloads({});
  CHECK(s.render().find("workload=\"redis\"") == std::string::npos);
}

TEST_CASE("every catalog family is rendered from the start, in catalog order") {
  PrometheusSink s;
  const std::string text = s.render();
  size_t last = 0;
  for (const auto& def : catalog()) {
    INFO(def.name);
    const size_t at =
        text.find("# TYPE " + def.name + " " + std::string(metricTypeName(def.type)) + "\n");
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
  // Only build info has a series before any update.
  CHECK(text.find("tierd_build_info{") != std::string::npos);
  CHECK(text.find("tierd_migrate_call_duration_seconds_bucket") == std::string::npos);
}

TEST_CASE("exporter serves /metrics on a free port and a taken port is a clear error") {
  ExporterOptions o;
  o.listenAddress = "127.0.0.1:0";
  auto sink = PrometheusSink::start(o);
  REQUIRE_MESSAGE(sink.ok(), sink.error().describe());
  const int port = (*sink)->port();
  REQUIRE(port > 0);
  CHECK((*sink)->add(metric::kSamplerSamples, {"damon-vaddr"}, 7));
  const std::string body = httpGet(port, "/metrics");
  CHECK(body.find("200 OK") != std::string::npos);
  CHECK(body.find("tierd_sampler_samples_total{source=\"damon-vaddr\"} 7") != std::string::npos);

  ExporterOptions taken;
  taken.listenAddress = "127.0.0.1:" + std::to_string(port);
  auto second = PrometheusSink::start(taken);
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == EADDRINUSE);
  CHECK(second.error().kind == tierd::ErrorKind::Environment);
  CHECK(second.error().describe().find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(second.error().describe().find("already listens") != std::string::npos);
}

TEST_CASE("basic auth: credentials from a private file, other files are refused") {
  const std::string good = tempFile("tierd:s3cret\n", 0600);
  ExporterOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.basicAuthFile = good;
  auto sink = PrometheusSink::start(o);
  REQUIRE_MESSAGE(sink.ok(), sink.error().describe());
  const int port = (*sink)->port();
  CHECK(httpGet(port, "/metrics").find("401") != std::string::npos);
  CHECK(httpGet(port, "/metrics", "dGllcmQ6d3Jvbmc=").find("401") !=
        std::string::npos);                                              // tierd:wrong
  const std::string ok = httpGet(port, "/metrics", "dGllcmQ6czNjcmV0");  // tierd:s3cret
  CHECK(ok.find("200 OK") != std::string::npos);
  CHECK(ok.find("tierd_build_info") != std::string::npos);
  ::unlink(good.c_str());

  const std::string readable = tempFile("tierd:s3cret\n", 0640);
  auto r = readBasicAuthFile(readable);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().describe().find("group or others") != std::string::npos);
  ExporterOptions o2;
  o2.listenAddress = "127.0.0.1:0";
  o2.basicAuthFile = readable;
  CHECK_FALSE(PrometheusSink::start(o2).ok());
  ::unlink(readable.c_str());

  const std::string malformed = tempFile("no-colon-here\n", 0600);
  auto m = readBasicAuthFile(malformed);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().kind == tierd::ErrorKind::Input);
  ::unlink(malformed.c_str());
  CHECK_FALSE(readBasicAuthFile("/nonexistent/tierd-auth").ok());
}

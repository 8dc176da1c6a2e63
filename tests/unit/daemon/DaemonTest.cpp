// The daemon's translation of the compiled config into its seams (tierd/daemon/Tuning.h).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "policy/ConfigCompiler.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tests/unit/support/HttpGet.h"
#include "tierd/daemon/Daemon.h"

using namespace tierd;

TEST_CASE("the perf sources get [sampling] sample_period and cpu_budget_percent") {
  policy::CompileOutcome out = policy::compileConfigText(
      "[sampling]\nsample_period = 4093\ncpu_budget_percent = 2.5\n", "/x/tierd.toml");
  REQUIRE(out.ok());
  const telemetry::PerfTuning t = daemon::perfTuning(*out.config);
  CHECK(t.samplePeriod == 4093);
  CHECK(t.cpuBudget == doctest::Approx(0.025));
  // The defaults are what the sampler used before the keys were read: 10007 events, 1%.
  policy::CompileOutcome empty = policy::compileConfigText("", "/x/tierd.toml");
  REQUIRE(empty.ok());
  CHECK(daemon::perfTuning(*empty.config).samplePeriod == telemetry::PerfTuning{}.samplePeriod);
  CHECK(daemon::perfTuning(*empty.config).cpuBudget ==
        doctest::Approx(telemetry::PerfTuning{}.cpuBudget));
}

TEST_CASE("each DAMON source reads its regions through the tracepoint, at most 1000 of them") {
  // No key: the tracepoint where tracefs offers it (DamonSource falls back to tried regions,
  // saying why); DAMON's own bound on adaptive regions, nr_regions/min 100.
  auto empty = policy::compileConfigText("", "/x/tierd.toml");
  REQUIRE(empty.ok());
  CHECK(daemon::damonTuning(*empty.config).read == telemetry::DamonReadPath::Tracepoint);
  CHECK(daemon::damonTuning(*empty.config).maxRegions == 1000);
  CHECK(daemon::damonTuning(*empty.config).minRegions == 100);
  // The keys that chose them are gone: a config that still sets one is told so.
  for (const char* key :
       {"damon_read = \"tracepoint\"", "damon_max_regions = 400", "kdamond_nice = 19"}) {
    auto old = policy::compileConfigText(std::string("[sampling]\n") + key + "\n", "/x/tierd.toml");
    REQUIRE_MESSAGE(old.errors.size() == 1, key);
    CHECK_MESSAGE(old.errors[0].message.rfind("no longer a key: ", 0) == 0, old.errors[0].message);
    CHECK(old.errors[0].message.find("delete the line") != std::string::npos);
  }
}

TEST_CASE("each DAMON source gets cpu_budget_percent as its kdamond's budget") {
  policy::CompileOutcome out =
      policy::compileConfigText("[sampling]\ncpu_budget_percent = 2.5\n", "/x/tierd.toml");
  REQUIRE(out.ok());
  const telemetry::DamonConfig c = daemon::damonTuning(*out.config);
  CHECK(c.cpuBudget == doctest::Approx(0.025));
  CHECK(c.clockTicksPerSecond == static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
  CHECK(c.adaptiveSampling);
  CHECK(c.maxSampleUs == 20000);  // the longest interval the budget may ask for
  policy::CompileOutcome empty = policy::compileConfigText("", "/x/tierd.toml");
  REQUIRE(empty.ok());
  CHECK(daemon::damonTuning(*empty.config).cpuBudget == doctest::Approx(0.01));
  policy::CompileOutcome longer =
      policy::compileConfigText("[sampling]\nmax_sample_interval = \"1s\"\n", "/x/tierd.toml");
  REQUIRE(longer.ok());
  CHECK(daemon::damonTuning(*longer.config).maxSampleUs == 1'000'000);
  CHECK(daemon::damonTuning(*empty.config).settledCpuBudget == 0.0);  // settling changes nothing
  policy::CompileOutcome settled =
      policy::compileConfigText("[sampling]\nsettled_cpu_budget_percent = 5\n", "/x/tierd.toml");
  REQUIRE(settled.ok());
  CHECK(daemon::damonTuning(*settled.config).settledCpuBudget == doctest::Approx(0.05));
}

TEST_CASE("checkReplayTrace accepts a recorded trace and says why not otherwise") {
  CHECK(daemon::checkReplayTrace(std::string(TIERD_FIXTURES) + "/traces/gups-phases.trace") == "");
  CHECK(daemon::checkReplayTrace("/nonexistent/x.trace").find("cannot read the trace") !=
        std::string::npos);
  CHECK(daemon::checkReplayTrace(std::string(TIERD_FIXTURES) +
                                 "/config/invalid/traces/bad-header.trace")
            .find("header lacks one of") != std::string::npos);
  // A device or FIFO named as the trace is refused unread: before, /dev/zero was read without
  // end and a FIFO blocked the compile (of a reload too, on the daemon's tick loop).
  CHECK(daemon::checkReplayTrace("/dev/zero") == "/dev/zero: the trace is not a regular file");
  char dir[] = "/tmp/tierd-trace-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/t.trace";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(daemon::checkReplayTrace(fifo) == fifo + ": the trace is not a regular file");
  CHECK(daemon::checkReplayTrace(dir) == std::string(dir) + ": the trace is not a regular file");
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST_CASE("daemon.metrics_basic_auth_file makes /metrics answer 401 without the credentials") {
  char dir[] = "/tmp/tierd-daemon-auth-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string auth = std::string(dir) + "/metrics.auth";
  {
    FILE* f = std::fopen(auth.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("prom:s3cret\n", f);
    std::fclose(f);
  }
  REQUIRE(::chmod(auth.c_str(), 0600) == 0);
  // Relative to the config file's directory, like every path in the config.
  policy::CompileOutcome out = policy::compileConfigText(
      "[daemon]\nmetrics_listen = \"127.0.0.1:0\"\nmetrics_basic_auth_file = \"metrics.auth\"\n",
      std::string(dir) + "/tierd.toml");
  REQUIRE_MESSAGE(out.ok(), out.errors.front().describe());
  const telemetry::ExporterOptions o = daemon::exporterOptions(*out.config);
  CHECK(o.listenAddress == "127.0.0.1:0");
  CHECK(o.basicAuthFile == auth);
  auto sink = telemetry::PrometheusSink::start(o);
  REQUIRE_MESSAGE(sink.ok(), sink.error().describe());
  const int port = (*sink)->port();
  CHECK(testing::httpGet(port, "/metrics").find("HTTP/1.1 401") == 0);
  const std::string ok = testing::httpGet(port, "/metrics", "cHJvbTpzM2NyZXQ=");  // prom:s3cret
  CHECK(ok.find("200 OK") != std::string::npos);
  CHECK(ok.find("tierd_build_info") != std::string::npos);
  sink.value().reset();
  ::unlink(auth.c_str());
  ::rmdir(dir);
}

TEST_CASE("without metrics_basic_auth_file /metrics is open, and the key needs metrics_listen") {
  policy::CompileOutcome open =
      policy::compileConfigText("[daemon]\nmetrics_listen = \"127.0.0.1:0\"\n", "/x/tierd.toml");
  REQUIRE(open.ok());
  CHECK(daemon::exporterOptions(*open.config).basicAuthFile.empty());
  policy::CompileOutcome off = policy::compileConfigText(
      "[daemon]\nmetrics_listen = \"\"\nmetrics_basic_auth_file = \"/etc/tierd/metrics.auth\"\n",
      "/x/tierd.toml");
  REQUIRE_FALSE(off.ok());
  CHECK(off.errors.front().describe().find("daemon.metrics_basic_auth_file") != std::string::npos);
}

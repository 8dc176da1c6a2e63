// The daemon's translation of the compiled config into its seams (tierd/daemon/Daemon.h).
#include <doctest/doctest.h>

#include "policy/ConfigCompiler.h"
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

TEST_CASE("checkReplayTrace accepts a recorded trace and says why not otherwise") {
  CHECK(daemon::checkReplayTrace(std::string(TIERD_FIXTURES) + "/traces/gups-phases.trace") == "");
  CHECK(daemon::checkReplayTrace("/nonexistent/x.trace").find("cannot read the trace") !=
        std::string::npos);
  CHECK(daemon::checkReplayTrace(std::string(TIERD_FIXTURES) +
                                 "/config/invalid/traces/bad-header.trace")
            .find("header lacks one of") != std::string::npos);
}

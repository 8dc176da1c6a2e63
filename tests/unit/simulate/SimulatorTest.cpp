// tierctl simulate: the production tick engine replaying traces on a modelled machine
// (tierd/simulate/Simulator.h). Goldens are regenerated with TIERD_UPDATE_GOLDEN=1.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/ConfigCompiler.h"
#include "telemetry/hotness/Trace.h"
#include "tests/unit/support/Golden.h"
#include "tierd/core/Units.h"
#include "tierd/simulate/Simulator.h"

using namespace tierd;
using namespace tierd::daemon;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = TIERD_FIXTURES;
const std::string kQemu = kFixtures + "/topology/qemu-2node";
constexpr uint64_t kSecond = 1'000'000'000;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

telemetry::Trace loadTrace(const std::string& path) {
  auto t = telemetry::parseTrace(slurp(path), path);
  REQUIRE_MESSAGE(t.ok(), t.error().describe());
  return t.value();
}

policy::CompiledConfig compile(const std::string& toml) {
  auto c = policy::compileConfigText(toml, "simulate-test.toml");
  if (!c.ok()) FAIL(c.errors.front().describe());
  return *c.config;
}

policy::CompiledConfig compileFile(const std::string& path) {
  auto c = policy::compileConfigFile(path);
  if (!c.ok()) FAIL(c.errors.front().describe());
  return *c.config;
}

SimulationResult run(const telemetry::Trace& trace, const policy::CompiledConfig& config,
                     const std::string& topology = kQemu, uint64_t tailNs = 0) {
  SimulationOptions o;
  o.topologyDir = topology;
  o.tailNs = tailNs;
  o.traceLabel = "trace";
  o.configLabel = "config";
  o.topologyLabel = "topology";
  auto r = simulate(trace, config, o);
  REQUIRE_MESSAGE(r.ok(), r.error().describe());
  return r.value();
}

// A GUPS-like workload config; `extra` lines go into the [[workload]] table.
std::string gupsToml(uint64_t promoteMiBPerS, const std::string& headroom,
                     const std::string& extra) {
  return "[daemon]\ninterval = \"1s\"\n[migration]\nmax_promote_mib_per_s = " +
         std::to_string(promoteMiBPerS) + "\nmax_demote_mib_per_s = 64\nfast_headroom = \"" +
         headroom +
         "\"\n[[workload]]\nname = \"gups\"\ncommand = \"tierd-gups\"\nhot_threshold = 2.0\n"
         "cold_threshold = 1.0\nheat_half_life = \"1s\"\n" +
         extra;
}

// Two hot sets of `regions` 2 MiB regions each, alternating every `phaseSeconds`, `rate`
// samples per second all in the current hot set; fixed seed.
telemetry::Trace alternatingTrace(int regions, int phaseSeconds, int seconds, int rate) {
  telemetry::Trace t;
  t.header.source = "synthetic";
  t.header.topology = "test";
  uint64_t state = 42;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const uint64_t base = 0x7f1000000000;
  for (int i = 0; i < seconds * rate; ++i) {
    const uint64_t time = 5 * kSecond + static_cast<uint64_t>(i) * kSecond / rate;
    const int phase = (i / rate / phaseSeconds) % 2;
    const uint64_t region = static_cast<uint64_t>(phase * regions) + next(regions);
    t.samples.push_back({time, 777, 777, 0, base + region * 2 * kMiB + next(512) * 4096, 1, 0});
  }
  return t;
}

// A copy of qemu-2node whose fast node 0 has `totalMiB` MiB with `freeMiB` MiB free.
struct TinyFastNode {
  fs::path dir;
  TinyFastNode(uint64_t totalMiB, uint64_t freeMiB) {
    char tmpl[] = "/tmp/simulate-tiny-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    fs::copy(kQemu, dir, fs::copy_options::recursive);
    const fs::path meminfo = dir / "sys/devices/system/node/node0/meminfo";
    std::istringstream in(slurp(meminfo.string()));
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.find(" MemTotal:") != std::string::npos)
        line = "Node 0 MemTotal:       " + std::to_string(totalMiB * 1024) + " kB";
      else if (line.find(" MemFree:") != std::string::npos)
        line = "Node 0 MemFree:        " + std::to_string(freeMiB * 1024) + " kB";
      out += line + "\n";
    }
    std::ofstream(meminfo, std::ios::trunc) << out;
  }
  ~TinyFastNode() { fs::remove_all(dir); }
};

void checkGolden(const std::string& path, const std::string& actual) {
  if (tierd::testing::goldenUpdateRequested()) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
    MESSAGE("updated " << path);
  }
  const std::string expected = slurp(path);
  CHECK_MESSAGE(actual == expected,
                "differs from " << path << " (TIERD_UPDATE_GOLDEN=1 rewrites it)");
}

}  // namespace

TEST_CASE("golden: the phases trace under a 16 MiB quota, on the rig's two-node topology") {
  const telemetry::Trace trace = loadTrace(kFixtures + "/traces/gups-phases.trace");
  const policy::CompiledConfig config = compileFile(kFixtures + "/simulate/phases-quota.toml");
  SimulationOptions o;
  o.topologyDir = kQemu;
  o.traceLabel = "tests/fixtures/traces/gups-phases.trace";
  o.configLabel = "tests/fixtures/simulate/phases-quota.toml";
  o.topologyLabel = "tests/fixtures/topology/qemu-2node";
  auto r = simulate(trace, config, o);
  REQUIRE_MESSAGE(r.ok(), r.error().describe());

  // What the model must show, independent of the golden: 64 sampled regions on the slow node,
  // the first hot set promoted within the quota, then exchanged for the second.
  CHECK(r->fastNodes == std::vector<NodeId>{0});
  CHECK(r->slowNodes == std::vector<NodeId>{1});
  CHECK(r->modelledBytes == 64 * 2 * kMiB);
  REQUIRE(r->ticks.size() == 60);
  CHECK(r->ticks.front().fastSamples == 0);  // everything starts on the slow tier
  const SimSummary& s = r->summary;
  CHECK(s.samples == trace.samples.size());
  CHECK(s.promotedBytes >= 16 * 2 * kMiB);  // both hot sets went up
  CHECK(s.demotedBytes >= 8 * 2 * kMiB);    // the first went down again
  CHECK(s.peakFastBytes <= 16 * kMiB);      // never over the quota
  CHECK(s.pingPongMoves == 0);  // promoting, then demoting once cooled, is not ping-pong
  CHECK(s.lastQuarterFastAccesses * 10 >= s.lastQuarterAccesses * 8);  // >= 80% on the fast tier
  const SimTick& beforeShift = r->ticks[29];
  const SimTick& afterShift = r->ticks[31];
  CHECK(beforeShift.fastAccesses * 10 >= beforeShift.accesses * 8);
  CHECK(afterShift.fastAccesses * 2 < afterShift.accesses);  // the shift is visible
  for (const SimTick& t : r->ticks) {
    CHECK(t.promotedBytes <= 8 * kMiB);  // 8 MiB/s at a 1 s tick
    CHECK(t.fastBytes + t.slowBytes == r->modelledBytes);
  }

  checkGolden(kFixtures + "/simulate/phases-quota.txt", formatSimulationText(r.value()));
  checkGolden(kFixtures + "/simulate/phases-quota.json", simulationJson(r.value()).dump(2) + "\n");
}

TEST_CASE("the same inputs give the same output, byte for byte") {
  const telemetry::Trace trace = loadTrace(kFixtures + "/traces/gups-phases.trace");
  const policy::CompiledConfig config = compileFile(kFixtures + "/simulate/phases-quota.toml");
  const std::string a = simulationJson(run(trace, config)).dump();
  const std::string b = simulationJson(run(trace, config)).dump();
  CHECK(a == b);
  CHECK(formatSimulationText(run(trace, config), 5) == formatSimulationText(run(trace, config), 5));
}

TEST_CASE("max_promote_mib_per_s = 0 never promotes") {
  const telemetry::Trace trace = loadTrace(kFixtures + "/traces/gups-phases.trace");
  const SimulationResult r = run(trace, compile(gupsToml(0, "1%", "")));
  CHECK(r.summary.samples > 0);
  CHECK(r.summary.promotedBytes == 0);
  CHECK(r.summary.fastAccesses == 0);
  for (const SimTick& t : r.ticks) {
    CHECK(t.plannedPromoteBytes == 0);
    CHECK(t.fastBytes == 0);
  }
  // Side by side: the same run with a budget does promote.
  CHECK(run(trace, compile(gupsToml(64, "1%", ""))).summary.promotedBytes > 0);
}

TEST_CASE("a tiny fast node is never filled past its headroom") {
  // Node 0: 64 MiB, 20 MiB free, 4 MiB headroom -> room for 8 regions; the trace's two hot
  // sets want 16.
  TinyFastNode tiny(64, 20);
  const telemetry::Trace trace = loadTrace(kFixtures + "/traces/gups-phases.trace");
  const SimulationResult r = run(trace, compile(gupsToml(64, "4MiB", "")), tiny.dir.string());
  CHECK(r.fastFreeAtStartBytes == 20 * kMiB);
  CHECK(r.fastHeadroomBytes == 4 * kMiB);
  CHECK(r.summary.peakFastBytes > 0);
  CHECK(r.summary.peakFastBytes <= 16 * kMiB);
  CHECK(r.summary.noMemoryPages == 0);  // the policy never asked for more than fits
  CHECK(r.summary.minFastFreeBytes >= 4 * kMiB);
  for (const SimTick& t : r.ticks)
    CHECK(t.fastFreeBytes >= r.fastHeadroomBytes);
}

TEST_CASE("alternating hot sets with cooldown 0 show ping-pong and a long cooldown damps it") {
  // 4-region hot sets alternating every 3 s; quota 8 MiB = one hot set.
  const telemetry::Trace trace = alternatingTrace(4, 3, 60, 100);
  const std::string quota = "fast_quota = \"8MiB\"\n";
  const SimulationResult eager =
      run(trace, compile(gupsToml(64, "1%", quota + "cooldown = \"0s\"\n")));
  const SimulationResult calm =
      run(trace, compile(gupsToml(64, "1%", quota + "cooldown = \"30s\"\n")));
  CHECK(eager.summary.pingPongMoves > 0);
  CHECK(eager.summary.demotedBytes > 0);
  CHECK(calm.summary.pingPongMoves < eager.summary.pingPongMoves);
  uint64_t perTick = 0;
  for (const SimTick& t : eager.ticks)
    perTick += t.pingPongMoves;
  CHECK(perTick == eager.summary.pingPongMoves);
  CHECK(formatSimulationText(eager).find("ping-pong") != std::string::npos);
}

TEST_CASE("pids named by a workload's pid list go to it and others to the default workload") {
  telemetry::Trace trace = alternatingTrace(2, 100, 3, 10);
  AccessSample other = trace.samples.front();
  other.pid = 888;
  other.tid = 888;
  trace.samples.push_back(other);
  const policy::CompiledConfig config =
      compile(gupsToml(64, "1%", "") + "[[workload]]\nname = \"listed\"\npids = [888]\n");
  const SimulationResult r = run(trace, config);
  REQUIRE(r.processes.size() == 2);
  CHECK(r.processes[0].pid == 777);
  CHECK(r.processes[0].workload == "gups");
  CHECK(r.processes[1].pid == 888);
  CHECK(r.processes[1].workload == "listed");

  SimulationOptions o;
  o.topologyDir = kQemu;
  o.defaultWorkload = "nope";
  auto bad = simulate(trace, config, o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("no workload named 'nope'") != std::string::npos);
  o.defaultWorkload = "listed";
  auto listed = simulate(trace, config, o);
  REQUIRE(listed.ok());
  CHECK(listed->processes[0].workload == "listed");
}

TEST_CASE("bad inputs are clear errors") {
  const policy::CompiledConfig config = compile(gupsToml(64, "1%", ""));
  SimulationOptions o;
  o.topologyDir = kFixtures + "/topology/does-not-exist";
  auto missing = simulate(alternatingTrace(2, 1, 2, 10), config, o);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().describe().find("does-not-exist") != std::string::npos);

  o.topologyDir = kFixtures + "/topology/host-1node";  // one node: no slow tier
  auto oneNode = simulate(alternatingTrace(2, 1, 2, 10), config, o);
  REQUIRE_FALSE(oneNode.ok());
  CHECK(oneNode.error().message.find("fast and one slow") != std::string::npos);

  o.topologyDir = kQemu;
  auto empty = simulate(telemetry::Trace{}, config, o);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message.find("no samples") != std::string::npos);
}

TEST_CASE("a pid reused between the scope scan and the move: the new holder is never moved") {
  const telemetry::Trace trace = loadTrace(kFixtures + "/traces/gups-phases.trace");
  const policy::CompiledConfig config = compileFile(kFixtures + "/simulate/phases-quota.toml");
  auto withReuse = [&](uint64_t atNs) {
    SimulationOptions o;
    o.topologyDir = kQemu;
    o.traceLabel = "trace";
    o.configLabel = "config";
    o.topologyLabel = "topology";
    o.pidReuses = {{31337, atNs}};
    auto r = simulate(trace, config, o);
    REQUIRE_MESSAGE(r.ok(), r.error().describe());
    return r.value();
  };
  // Tick 1 plans the first 8 MiB of promotions for pid 31337 (the golden above moves them); the
  // pid changes hands after the plan: every move call is refused, nothing moves, then or later.
  const SimulationResult first = withReuse(1 * kSecond);
  REQUIRE(first.processes.size() == 1);
  CHECK(first.processes[0].reusedAtTick == 1);
  REQUIRE(first.ticks.size() >= 3);
  CHECK(first.ticks[0].plannedPromoteBytes == 8 * kMiB);
  CHECK(first.ticks[0].identityChecksFailed >= 1);
  CHECK(first.ticks[0].promotedBytes == 0);
  CHECK(first.ticks[0].pidReuses == 0);  // the next scope scan finds it
  CHECK(first.ticks[1].pidReuses == 1);
  for (size_t i = 1; i < first.ticks.size(); ++i) {
    // The old process's heat and plans are gone and the new holder is in no workload.
    CHECK(first.ticks[i].samples == 0);
    CHECK(first.ticks[i].plannedPromoteBytes == 0);
    CHECK(first.ticks[i].plannedDemoteBytes == 0);
    CHECK(first.ticks[i].identityChecksFailed == 0);
  }
  CHECK(first.summary.promotedBytes == 0);
  CHECK(first.summary.demotedBytes == 0);
  CHECK(first.summary.pidReuses == 1);
  CHECK(first.summary.newHolderMovedBytes == 0);
  CHECK(first.ticks.back().fastBytes == 0);  // the new holder's memory stayed where it was
  // The new holder never entered a scope: no hotness source was ever asked for it.
  for (const std::string& p : first.problems)
    CHECK_MESSAGE(p.find("sampling") == std::string::npos, p);

  // Reused at 2 s: tick 1 moved 8 MiB of the old process; the new holder finds its pages where
  // the old one's were (4 regions on the fast node) and nothing moves them afterwards.
  const SimulationResult second = withReuse(2 * kSecond);
  CHECK(second.ticks[0].promotedBytes == 8 * kMiB);
  CHECK(second.ticks[1].promotedBytes == 0);
  CHECK(second.ticks[1].identityChecksFailed >= 1);
  CHECK(second.summary.promotedBytes == 8 * kMiB);
  CHECK(second.summary.demotedBytes == 0);
  CHECK(second.summary.newHolderMovedBytes == 0);
  CHECK(second.ticks.back().fastBytes == 8 * kMiB);

  const std::string text = formatSimulationText(second);
  CHECK(text.find("model     pid 31337 reused at 2s: in tick 2, after its scope scan") !=
        std::string::npos);
  CHECK(text.find("pid reuse       1 tracked pids found naming a new process") !=
        std::string::npos);
  const nlohmann::json j = simulationJson(second);
  CHECK(j["model"]["pid_reuses"][0]["tick"] == 2);
  CHECK(j["summary"]["pid_reuses"] == 1);
  CHECK(j["summary"]["new_holder_moved_bytes"] == 0);
  CHECK(j["ticks"][1]["identity_checks_failed"] >= 1);
  // Without a pid reuse the documents keep their shape (the goldens above).
  const nlohmann::json plain = simulationJson(run(trace, config));
  CHECK_FALSE(plain["summary"].contains("pid_reuses"));

  // A pid the trace does not have is an error.
  SimulationOptions bad;
  bad.topologyDir = kQemu;
  bad.pidReuses = {{4242, kSecond}};
  auto refused = simulate(trace, config, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("pid 4242 is not in the trace") != std::string::npos);
}

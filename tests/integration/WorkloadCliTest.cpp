// Runs the built binaries: tierd-gups (hot set file, integrity check, determinism by seed) and
// tierctl sampling/record/hotness on fixture trees and on this machine.

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "telemetry/hotness/HeatRegions.h"
#include "telemetry/hotness/Trace.h"
#include "tests/unit/support/Skip.h"
#include "tierd/core/Units.h"

using namespace tierd;
using namespace tierd::telemetry;

namespace {

struct Run {
  int status = -1;
  std::string out;
};

Run run(const std::string& cmd) {
  Run r;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kBin = TIERD_BIN_DIR;

}  // namespace

TEST_CASE("tierd-gups writes a seeded scattered hot set and verifies its table") {
  const std::string a = "/tmp/tierd-gups-test-a." + std::to_string(::getpid());
  const std::string b = "/tmp/tierd-gups-test-b." + std::to_string(::getpid());
  auto r1 =
      run(kBin + "/tierd-gups --size 64M --seconds 1 --seed 5 --threads 2 --hot-set-out " + a);
  auto r2 = run(kBin + "/tierd-gups --size 64M --seconds 1 --seed 5 --hot-set-out " + b);
  CHECK(r1.status == 0);
  CHECK(r1.out.find("checksum ok") != std::string::npos);
  CHECK(r1.out.find("t=1s updates/s=") != std::string::npos);
  auto ta = parseHotSet(slurp(a), a);
  auto tb = parseHotSet(slurp(b), b);
  REQUIRE(ta.ok());
  REQUIRE(tb.ok());
  const auto ra = truthRegions(ta.value());
  const auto rb = truthRegions(tb.value());
  CHECK(ra.size() == 3);  // 10% of 32 chunks, rounded
  REQUIRE(ra.size() == rb.size());
  // Same seed: the same chunks relative to the (2 MiB aligned) table start, in each process.
  auto base = [](const std::string& out) {
    const auto at = out.find(" at 0x");
    return std::stoull(out.substr(at + 6), nullptr, 16);
  };
  for (size_t i = 0; i < ra.size(); ++i)
    CHECK(ra[i] - base(r1.out) == rb[i] - base(r2.out));
  std::remove(a.c_str());
  std::remove(b.c_str());
  CHECK(run(kBin + "/tierd-gups --size 64X").status == 2);
  CHECK(run(kBin + "/tierd-gups --hot-share 1.5").status == 2);
}

TEST_CASE("tierd-gups rejects sizes and nodes that would wrap around instead of running") {
  // 17592186044480M = 2^44 MiB + 64 MiB: 2^64 + 64 MiB bytes, which wrapped to 64 MiB.
  CHECK(run(kBin + "/tierd-gups --size 17592186044480M --seconds 1").status == 2);
  // 4294967296 = 2^32, which became node 0 through static_cast<int>.
  CHECK(run(kBin + "/tierd-gups --size 64M --node 4294967296 --seconds 1").status == 2);
  CHECK(run(kBin + "/tierd-churn --size 17592186044480M --seconds 1").status == 2);
  CHECK(run(kBin + "/tierd-holdmem --size 17592186044480M --seconds 1").status == 2);
}

TEST_CASE("tierd-memsim names the bad argument and exits 2, without an exception") {
  auto err = [](const std::string& args) {
    Run r = run("(" + kBin + "/tierd-memsim " + args + " 2>&1 </dev/null)");
    CHECK(r.status == 2);
    return r.out;
  };
  CHECK(err("count --node 0x --size 1M") ==
        "tierd-memsim: --node: expected an unsigned integer, got '0x'\n");
  CHECK(err("count --node 0 --size 99999999999999999999") ==
        "tierd-memsim: --size: an unsigned integer out of range: '99999999999999999999'\n");
  CHECK(err("count --node 0 --size 17179869185G") ==
        "tierd-memsim: --size: size '17179869185G' is more than 18446744073709551615 bytes\n");
  CHECK(err("count --node 0 --size 1M --reps 0") ==
        "tierd-memsim: --reps: '0' is not in 1..1000000\n");
  CHECK(err("heat 12x") == "tierd-memsim: heat PID: expected an unsigned integer, got '12x'\n");
}

TEST_CASE("tierd-gups --hot-chunk makes the hot set whole chunks of that size") {
  const std::string a = "/tmp/tierd-gups-test-chunk." + std::to_string(::getpid());
  // 60 MiB rounds up to 64 MiB (whole 16 MiB chunks): 4 chunks, 25% hot = 1 chunk.
  auto r = run(kBin + "/tierd-gups --size 60M --hot-chunk 16M --hot-fraction 0.25 --seconds 1 " +
               "--seed 3 --unbind --node 0 --hot-set-out " + a);
  CHECK(r.status == 0);
  CHECK(r.out.find("table 64.0 MiB") != std::string::npos);
  CHECK(r.out.find("1 hot of 4 16.0 MiB chunks") != std::string::npos);
  CHECK(r.out.find("checksum ok") != std::string::npos);
  auto t = parseHotSet(slurp(a), a);
  REQUIRE(t.ok());
  REQUIRE(t->ranges.size() == 1);
  const auto at = r.out.find(" at 0x");
  REQUIRE(at != std::string::npos);
  const uint64_t base = std::stoull(r.out.substr(at + 6), nullptr, 16);
  const auto [start, end] = t->ranges[0];
  CHECK(end - start == 16 * kMiB);
  CHECK((start - base) % (16 * kMiB) == 0);
  CHECK(start >= base);
  CHECK(end <= base + 64 * kMiB);
  CHECK(truthRegions(t.value()).size() == 8);  // eight 2 MiB regions in the hot chunk
  std::remove(a.c_str());
  // A chunk must be a whole number of 2 MiB (THP) chunks.
  CHECK(run(kBin + "/tierd-gups --hot-chunk 3M").status == 2);
  CHECK(run(kBin + "/tierd-gups --hot-chunk 1M").status == 2);
}

TEST_CASE(
    "tierd-hotset reads the hot set strictly: a malformed line is an error naming file:line") {
  const std::string f = "/tmp/tierd-hotset-test." + std::to_string(::getpid());
  // Each file is one kind of damage the old reader (std::stoi/std::stoull) either aborted on or
  // read as something else; the strict parser names the file and line and tierd-hotset exits 1.
  const std::pair<const char*, const char*> bad[] = {
      {"pid x\n7f0000000000-7f0000200000\n", ":1"},           // pid not a number (stoi threw)
      {"pid 1\n7f0000000000-7f00zz200000\n", ":2"},           // hex cut short (stoull read 7f00)
      {"pid 1\n7f0000200000-7f0000000000\n", ":2"},           // end before start
      {"pid 99999999999\n7f0000000000-7f0000200000\n", ":1"}  // beyond pid_t
  };
  for (const auto& [text, line] : bad) {
    CAPTURE(text);
    {
      std::ofstream out(f);
      out << text;
    }
    auto r = run("(" + kBin + "/tierd-hotset --hot-set " + f + " 2>&1)");
    CHECK(r.status == 1);
    CHECK(r.out.find(f + line) != std::string::npos);
  }
  std::remove(f.c_str());
}

TEST_CASE("tierctl sampling --probe --json on this machine's fixture tree") {
  auto r = run(kBin + "/tierctl sampling --probe --json --sys-root " + std::string(TIERD_FIXTURES) +
               "/sampling/host-nopmu");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["hardware_pmu"] == false);
  CHECK(j["damon"]["usable"] == false);
  CHECK(j["damon"]["why"].get<std::string>().rfind("DAMON busy: kdamond 0 is not ours", 0) == 0);
  CHECK(j["chosen"] == "perf-sw-page-faults");
  CHECK(j["fallback"] == "perf-sw-page-faults");
}

TEST_CASE("tierctl record of a tierd-gups pid writes a trace with samples in its table") {
  if (::geteuid() != 0) {
    TIERD_SKIP("needs root for perf_event_open on another process (paranoid 2)");
  }
  const std::string truth = "/tmp/tierd-record-test-truth." + std::to_string(::getpid());
  const std::string trace = "/tmp/tierd-record-test-trace." + std::to_string(::getpid());
  // gups initializes 512 MiB (first-touch faults) while record is already attached.
  auto r = run("(" + kBin + "/tierd-gups --size 512M --seconds 3 --hot-set-out " + truth +
               " >/dev/null & echo $!) | { read p; " + kBin +
               "/tierctl record --pid $p --seconds 2 --out " + trace +
               " --source perf-sw-page-faults; }");
  CHECK(r.status == 0);
  auto t = parseTrace(slurp(trace), trace);
  REQUIRE(t.ok());
  CHECK(t->header.source == "perf-sw-page-faults");
  CHECK(t->header.samplePeriod >= 1);
  REQUIRE_FALSE(t->samples.empty());
  ::sleep(2);  // let gups finish and write nothing more
  std::remove(truth.c_str());
  std::remove(trace.c_str());
}

TEST_CASE("tierctl hotness scores a checked-in trace against its hot set") {
  const std::string fx = std::string(TIERD_FIXTURES) + "/traces/gups-sw-page-faults";
  auto r = run(kBin + "/tierctl hotness --trace " + fx + ".trace --truth " + fx + ".hotset --json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["samples"] == 200);
  CHECK(j["truth_regions"] == 26);
  CHECK(j["precision"].get<double>() >= 0.0);
  CHECK(run(kBin + "/tierctl hotness --trace " + fx + ".trace").status == 2);  // no --truth
}

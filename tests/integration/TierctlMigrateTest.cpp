// Runs tierctl locate / move / bench as an operator (and the QEMU rig) would, and checks the
// documented JSON fields (docs/migrate.md). Small buffers: speed is not asserted here.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "RunTierctl.h"

namespace {

using tierd::itest::Run;
using tierd::itest::run;

nlohmann::json runJson(const std::string& args) {
  Run r = run(args);
  REQUIRE_MESSAGE(r.exitCode == 0, r.out);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("tierctl sizes are written as in tierd.toml: 1GiB, never 1G") {
  // The config's grammar (policy/ConfigUnits.h): binary units spelled out, no bare numbers.
  for (const char* bad : {"1G", "8M", "4096", "2GB"}) {
    CAPTURE(bad);
    Run r = run(std::string("bench migrate --runs 0 --size ") + bad);
    CHECK(r.exitCode == 2);
    CHECK(r.out.find("--size") != std::string::npos);
    CHECK(r.out.find("byte size '" + std::string(bad) + "'") != std::string::npos);
    Run l = run(std::string("bench locate --runs 0 --size ") + bad);
    CHECK(l.exitCode == 2);
    CHECK(l.out.find("byte size '" + std::string(bad) + "'") != std::string::npos);
  }
}

TEST_CASE("tierctl bench migrate --json: the documented fields, all methods, data intact") {
  auto j = runJson("bench migrate --size 8MiB --page 4k --from 0 --to 0 --runs 2 --json");
  CHECK(j.at("page") == "4k");
  CHECK(j.at("page_size_bytes") == 4096);
  CHECK(j.at("size_bytes") == 8 << 20);
  CHECK(j.at("runs") == 2);
  CHECK(j.at("from") == 0);
  CHECK(j.at("to") == 0);
  CHECK(j.at("data_intact") == true);
  CHECK(j.at("source_fraction") == 1.0);
  for (const char* m : {"tierd", "raw_single_call", "per_4k"}) {
    INFO(m);
    const auto& mj = j.at("methods").at(m);
    CHECK(mj.at("gib_per_s_mean").get<double>() > 0);
    CHECK(mj.at("gib_per_s_stddev").get<double>() >= 0);
    CHECK(mj.at("gib_per_s").size() == 2);
    CHECK(mj.at("seconds").at("runs").size() == 2);
    CHECK(mj.contains("cpu_seconds_per_gib"));
    CHECK(mj.at("calls").get<int>() >= 1);
  }
  // One node: every page is already there (status = node 0).
  CHECK(j["methods"]["raw_single_call"]["statuses"]["node0"] == 2048);
  CHECK(j["methods"]["per_4k"]["addresses"] == 2048);
  CHECK(j["methods"]["tierd"]["statuses"]["already_there"] == 2048);
  CHECK(j["methods"]["tierd"]["bytes_moved"] == 0);
}

TEST_CASE("tierctl bench locate --json: identical to the naive query") {
  for (const char* page : {"4k", "thp"}) {
    INFO(page);
    auto j = runJson(std::string("bench locate --size 16MiB --page ") + page + " --runs 2 --json");
    CHECK(j.at("identical") == true);
    CHECK(j.at("speedup").get<double>() > 0);
    CHECK(j.at("methods").at("naive_per_4k").at("queried_pages") == 4096);
    CHECK(j.at("methods").at("tierd").at("seconds").size() == 2);
  }
}

TEST_CASE("tierctl locate and move on a running process") {
  // A plain /bin/sleep (this test binary may carry a terabyte ASan shadow, which is a different
  // test: the scan limit).
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(200 * 1000);
  const std::string pid = std::to_string(child);
  auto loc = runJson("locate --pid " + pid + " --json --verbose");
  CHECK(loc.at("pid") == child);
  CHECK(loc.at("present_bytes").get<uint64_t>() > 0);
  CHECK(loc.at("nodes").contains("0"));
  CHECK(loc.at("vmas").size() > 3);
  CHECK(loc.at("unscanned_bytes") == 0);
  auto mv = runJson("move --pid " + pid + " --to 0 --json");
  CHECK(mv.at("pages").at("moved") == 0);
  CHECK(mv.at("pages").at("already_there").get<uint64_t>() > 0);
  CHECK(mv.at("ranges_dropped") == 0);
  kill(child, SIGKILL);
  int st = 0;
  waitpid(child, &st, 0);

  Run bad = run("move --pid " + std::to_string(getpid()) + " --to 0 --range zz");
  CHECK(bad.exitCode == 2);
  CHECK(bad.out.find("--range") != std::string::npos);
  Run gone = run("locate --pid 4194304");  // above PID_MAX_LIMIT - 1: never a live process
  CHECK(gone.exitCode == 1);
  CHECK(gone.out.find("/proc/4194304/") != std::string::npos);
}

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

TEST_CASE(
    "tierctl sizes are written as in tierd.toml: 8M is 8MiB and no bare number or SI or lower "
    "case") {
  // The config's grammar (policy/ConfigUnits.h): binary units, long or one-letter.
  for (const char* good : {"8M", "8MiB"}) {
    CAPTURE(good);
    Run l = run(std::string("bench locate --runs 0 --size ") + good);
    CHECK(l.out.find("byte size") == std::string::npos);
  }
  for (const char* bad : {"4096", "2GB", "1g", "8m"}) {
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

TEST_CASE("tierctl bench migrate --target-pool: reserve or empty, empty only for hugetlb-2M") {
  Run bad = run("bench migrate --size 8MiB --page hugetlb-2M --from 0 --to 1 --target-pool none");
  CHECK(bad.exitCode == 2);
  CHECK(bad.out.find("--target-pool: must be reserve or empty, not 'none'") != std::string::npos);
  // Checked before any node or pool is looked at: the same answer on a one-node machine.
  Run thp = run("bench migrate --size 8MiB --page thp --from 0 --to 1 --target-pool empty");
  CHECK(thp.exitCode == 1);
  CHECK(thp.out.find("only hugetlb-2M destinations can come from outside the pool") !=
        std::string::npos);
  Run same = run("bench migrate --size 8MiB --page hugetlb-2M --from 0 --to 0 --target-pool empty");
  CHECK(same.exitCode == 1);
  CHECK(same.out.find("needs --to other than --from") != std::string::npos);
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
  CHECK(j.at("target_pool") == "reserve");
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
  // Nothing to move: no time inside move calls; the smaps read is timed apart, once per run.
  const auto& t = j["methods"]["tierd"];
  CHECK(t.at("move_call_seconds").at("runs") == nlohmann::json::array({0.0, 0.0}));
  CHECK(t.at("smaps_seconds").at("runs").size() == 2);
  CHECK(t.at("smaps_seconds").at("mean").get<double>() > 0);
  // tierd vs the raw call, paired per run: each ratio is that run's GiB/s ratio.
  const auto& ratios = j.at("tierd_vs_raw").at("per_run");
  REQUIRE(ratios.size() == 2);
  for (size_t i = 0; i < 2; ++i)
    CHECK(ratios[i].get<double>() ==
          doctest::Approx(t["gib_per_s"][i].get<double>() /
                          j["methods"]["raw_single_call"]["gib_per_s"][i].get<double>()));
  CHECK(j.at("tierd_vs_raw").at("median").get<double>() ==
        doctest::Approx((ratios[0].get<double>() + ratios[1].get<double>()) / 2));
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
  // A node the machine does not have: refused with the nodes it has, not counted as a move.
  Run nowhere = run("move --pid " + std::to_string(getpid()) + " --to 63");
  CHECK(nowhere.exitCode == 2);
  CHECK(nowhere.out.find("node 63 does not exist (nodes: ") != std::string::npos);
  Run gone = run("locate --pid 4194304");  // above PID_MAX_LIMIT - 1: never a live process
  CHECK(gone.exitCode == 1);
  CHECK(gone.out.find("/proc/4194304/") != std::string::npos);
}

TEST_CASE(
    "tierctl bench tick --json: unchanged ticks reuse the locate, changed ones read in full") {
  // The daemon's Engine on a forked process with 16 VMAs of THP-advised memory, dry run; the
  // process maps or unmaps one VMA before each changed tick. Times are not asserted, only that
  // they were measured and how the engine classified each tick (TickReport::locatesReused).
  auto j = runJson("bench tick --size 64MiB --vmas 16 --ticks 3 --json");
  CHECK(j.at("vmas_requested") == 16);
  CHECK(j.at("vmas_found") == 16);  // the gaps kept the kernel from merging them
  CHECK(j.at("managed_vmas").get<int>() >= 16);
  CHECK(j.at("vmas_total").get<int>() > j.at("managed_vmas").get<int>());
  CHECK(j.at("bench_bytes") == 64 << 20);
  CHECK(j.at("managed_bytes").get<uint64_t>() >= 64u << 20);
  CHECK(j.at("thp_bytes").get<uint64_t>() <= 64u << 20);
  CHECK(j.at("dry_run") == true);
  CHECK(j.at("ticks_per_kind") == 3);
  CHECK(j.at("first").at("full_read") == true);
  CHECK(j.at("first").at("cpu_ms").get<double>() > 0);
  const auto& same = j.at("unchanged");
  CHECK(same.at("ticks") == 3);
  CHECK(same.at("full_reads") == 0);
  CHECK(same.at("cpu_ms").at("median").get<double>() > 0);
  CHECK(same.at("cpu_ms").at("max").get<double>() >= same.at("cpu_ms").at("median").get<double>());
  const auto& changed = j.at("changed");
  CHECK(changed.at("ticks") == 3);
  CHECK(changed.at("full_reads") == 3);
  CHECK(changed.at("cpu_ms").at("median").get<double>() > 0);
  CHECK(changed.at("locate_cpu_ms_median").get<double>() > 0);
  const auto& ticks = j.at("ticks");
  REQUIRE(ticks.size() == 7);
  for (size_t i = 1; i < ticks.size(); ++i) {
    CAPTURE(i);
    const bool isChanged = i % 2 == 0;  // first, then unchanged/changed pairs
    CHECK(ticks[i].at("kind") == (isChanged ? "changed" : "unchanged"));
    CHECK(ticks[i].at("full_read") == isChanged);
    CHECK(ticks[i].at("cpu_ms").get<double>() > 0);
    CHECK(ticks[i].at("phases_cpu_ms").at("locate").get<double>() > 0);  // maps read at least
  }
  // The engine read the synthetic process without a problem (a host-wide one, such as the
  // kernel's own tiering running, may be reported and is not this test's business).
  const pid_t child = j.at("pid").get<pid_t>();
  CHECK(child > 0);
  for (const auto& p : j.at("problems"))
    CHECK(p.get<std::string>().find("pid " + std::to_string(child)) == std::string::npos);
  // The synthetic process was killed and reaped before tierctl exited.
  CHECK(kill(child, 0) == -1);
}

TEST_CASE("tierctl bench tick refuses a size smaller than its VMAs' 2 MiB pages") {
  Run r = run("bench tick --size 16MiB --vmas 16 --ticks 1");
  CHECK(r.exitCode == 2);
  CHECK(r.out.find("fewer 2 MiB pages than the 16 VMAs") != std::string::npos);
}

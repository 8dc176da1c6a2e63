// tierd-model-exporter: tierd's tick engine moving memory for real on the model kernel, with the
// daemon's metrics (DaemonMetrics) served by the production Prometheus exporter. Used where a
// test must see observations of real moves rather than declared zeros or demo values
// (TierdMetricsTest.cpp, dashboards_prometheus_test.py).
//   tierd-model-exporter --fixtures DIR [--listen 127.0.0.1:0] [--warmup-ticks N]
//                        [--max-seconds N]
// The machine: the rig guest's captured two-node topology (DIR/topology/qemu-2node, copied to a
// temporary root). One workload "gups": one process with a 256 MiB THP table that starts on the
// slow node; a scripted source (named "replay": it replays a fixed access pattern) samples 40
// of its 2 MiB regions, switching between two hot sets every 4 ticks, so hot regions are
// promoted, cooled ones demoted and some moved up, down and up again (ping-pong). The migrator
// is the production MovePagesMigrator engine on FakePageSystem
// (tierd/simulate/ModelKernelMigrator.h). Simulated time: 1 s per tick. It runs --warmup-ticks
// ticks (default 24), prints "listening on port N", then one tick every 100 ms until SIGTERM/SIGINT
// or --max-seconds (default 300).
#include <poll.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "policy/ConfigCompiler.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/core/Units.h"
#include "tierd/daemon/DaemonMetrics.h"
#include "tierd/daemon/Engine.h"
#include "tierd/daemon/TopologyMetrics.h"
#include "tierd/simulate/ModelKernelMigrator.h"
#include "tierd/sys/Vmstat.h"

namespace fs = std::filesystem;
using namespace tierd;

namespace {

volatile sig_atomic_t gStop = 0;
void onSignal(int) {
  gStop = 1;
}

constexpr pid_t kPid = 4242;
constexpr uint64_t kBase = 0x7f0000000000;
constexpr uint64_t kTable = 256 * kMiB;
constexpr uint64_t kSecond = 1'000'000'000;
constexpr int kHotRegions = 40;
constexpr int kPhaseTicks = 4;
constexpr uint64_t kFastFree = 160 * kMiB;  // node 0's free memory besides the table

// Samples one of two hot sets of kPid (regions 0-39, then 40-79), 8 samples per region a tick.
class ScriptedReplay final : public telemetry::HotnessSource {
 public:
  explicit ScriptedReplay(const uint64_t* tick) : tick_(tick) {}
  std::string name() const override { return "replay"; }
  Status start() override { return Ok{}; }
  Result<std::vector<AccessSample>> drain(uint64_t untilNs) override {
    std::vector<AccessSample> out;
    const int first = (*tick_ / kPhaseTicks) % 2 == 0 ? 0 : kHotRegions;
    for (int r = first; r < first + kHotRegions; ++r)
      for (int i = 0; i < 8; ++i)
        out.push_back({untilNs, kPid, kPid, 0, kBase + r * 2 * kMiB + i * 4096, 1, 0});
    stats_.samples += out.size();
    return out;
  }
  void stop() override {}
  telemetry::SourceStats stats() const override { return stats_; }

 private:
  const uint64_t* tick_;
  telemetry::SourceStats stats_;
};

void put(const fs::path& root, const std::string& abs, const std::string& text) {
  fs::create_directories(fs::path(root.string() + abs).parent_path());
  std::ofstream(root.string() + abs, std::ios::binary) << text;
}

}  // namespace

int main(int argc, char** argv) {
  telemetry::ExporterOptions options;
  options.listenAddress = "127.0.0.1:0";
  std::string fixtures;
  long warmup = 24, maxSeconds = 300;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "tierd-model-exporter: " << a << " needs a value\n";
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--fixtures") {
      fixtures = v;
    } else if (a == "--listen") {
      options.listenAddress = v;
    } else if (a == "--warmup-ticks") {
      warmup = std::strtol(v.c_str(), nullptr, 10);
    } else if (a == "--max-seconds") {
      maxSeconds = std::strtol(v.c_str(), nullptr, 10);
    } else {
      std::cerr << "usage: tierd-model-exporter --fixtures DIR [--listen ADDR] "
                   "[--warmup-ticks N] [--max-seconds N]\n";
      return 2;
    }
  }
  if (fixtures.empty()) {
    std::cerr << "tierd-model-exporter: --fixtures DIR is required\n";
    return 2;
  }
  char tmpl[] = "/tmp/tierd-model-exporter-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  const fs::path root = tmpl;
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{root};
  fs::copy(fixtures + "/topology/qemu-2node", root, fs::copy_options::recursive);
  put(root, "/proc/self/mountinfo", "23 1 0:21 / / rw - ext4 /dev/vda rw\n");
  const std::string d = "/proc/" + std::to_string(kPid);
  put(root, d + "/comm", "tierd-gups\n");
  put(root, d + "/cmdline", std::string("tierd-gups\0", 11));
  put(root, d + "/stat",
      std::to_string(kPid) + " (tierd-gups) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1000 0 0\n");
  put(root, d + "/status", "Name:\tx\nCpus_allowed_list:\t0-63\nMems_allowed_list:\t0-3\n");
  fs::remove(root.string() + d + "/exe");
  fs::create_symlink("/usr/bin/tierd-gups", root.string() + d + "/exe");

  auto compiled = policy::compileConfigText(R"(
[daemon]
interval = "1s"
[migration]
max_promote_mib_per_s = 1024
max_demote_mib_per_s = 1024
fast_headroom = "1%"
[[workload]]
name = "gups"
command = "tierd-gups"
hot_threshold = 2.0
cold_threshold = 0.5
heat_half_life = "1s"
cooldown = "2s"
)",
                                            "model-exporter.toml");
  if (!compiled.ok()) {
    std::cerr << "tierd-model-exporter: " << compiled.errors.front().describe() << "\n";
    return 1;
  }
  auto config = std::make_shared<const policy::CompiledConfig>(*compiled.config);

  auto migrator = std::make_unique<migrate::ModelKernelMigrator>();
  migrate::FakePageSystem* kernel = &migrator->kernel();
  kernel->map(kPid, kBase, kTable, migrate::FakeBacking::Thp);
  kernel->populate(kPid, kBase, kTable, 1);  // everything starts on the slow node
  uint64_t tick = 0;
  daemon::SourceFactory factory =
      [&tick](pid_t, const std::string&) -> Result<std::unique_ptr<telemetry::HotnessSource>> {
    return std::unique_ptr<telemetry::HotnessSource>(std::make_unique<ScriptedReplay>(&tick));
  };
  const sys::SysRoot sysRoot(root.string());
  std::shared_ptr<migrate::ProcReads> reads = migrator->reads();
  daemon::Engine engine(
      sysRoot, std::move(migrator), factory, /*selfPid=*/1, config,
      [kernel](pid_t pid) { return kernel->smaps(pid); },
      [kernel](pid_t pid) { return kernel->numaMaps(pid); }, daemon::MappingsReader{},
      std::move(reads));

  auto sink = telemetry::PrometheusSink::start(options);
  if (!sink) {
    std::cerr << "tierd-model-exporter: " << sink.error().describe() << "\n";
    return 1;
  }
  signal(SIGTERM, onSignal);
  signal(SIGINT, onSignal);
  daemon::DaemonMetrics metrics(**sink);
  metrics.start(*config, {4096, 2 * kMiB}, "replay");
  metrics.capability("move_pages", true);

  // The fast node's MemFree is rewritten before each tick: kFastFree minus the table's bytes on
  // it, so promotions fill it and cold regions must make room (demotions).
  const std::string meminfo0 = root.string() + "/sys/devices/system/node/node0/meminfo";
  std::string meminfoText;
  {
    std::ifstream in(meminfo0);
    meminfoText.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto rewriteFastFree = [&]() {
    uint64_t onFast = 0;
    for (uint64_t a = kBase; a < kBase + kTable; a += 2 * kMiB)
      if (kernel->nodeOf(kPid, a) == 0) onFast += 2 * kMiB;
    const uint64_t freeB = kFastFree > onFast ? kFastFree - onFast : 0;
    std::istringstream in(meminfoText);
    std::string line, out;
    while (std::getline(in, line))
      out += line.find(" MemFree:") != std::string::npos
                 ? "Node 0 MemFree:        " + std::to_string(freeB / kKiB) + " kB\n"
                 : line + "\n";
    std::ofstream(meminfo0, std::ios::binary | std::ios::trunc) << out;
  };

  auto runTick = [&]() -> bool {
    ++tick;
    rewriteFastFree();
    const uint64_t now = tick * kSecond;
    kernel->sleepUntilNs(static_cast<int64_t>(now), nullptr);
    auto report = engine.tick(now, static_cast<int64_t>(now + kSecond), nullptr);
    if (!report) {
      std::cerr << "tierd-model-exporter: tick " << tick << ": " << report.error().describe()
                << "\n";
      metrics.tickFailed();
      return false;
    }
    publishTopology(report->topology, **sink);
    metrics.tick(report.value(), daemon::snapshotSources(engine, sysRoot), 1.0,
                 [&](pid_t pid) { return engine.workloadOf(pid); });
    metrics.totals(engine.totals(), engine.heat().recordStats().pingPongHeld);
    if (auto vm = sys::readVmstat(sysRoot)) metrics.vmstat(vm.value());
    metrics.loopCpu("main", 0.0001);
    metrics.loopCpu("metrics", 0.0001);
    metrics.tickDone(true, static_cast<double>(std::time(nullptr)));
    return true;
  };
  for (long i = 0; i < warmup; ++i)
    if (!runTick()) return 1;
  std::cout << "listening on port " << (*sink)->port() << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(maxSeconds);
  while (!gStop && std::chrono::steady_clock::now() < deadline) {
    poll(nullptr, 0, 100);
    if (!runTick()) return 1;
  }
  engine.shutdown();
  return 0;
}

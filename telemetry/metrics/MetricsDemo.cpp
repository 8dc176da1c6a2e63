// tierd-metrics-demo: serves every catalog metric with demo values, for the real-Prometheus
// dashboard test (tests/integration/dashboards_prometheus_test.py) and for trying dashboards.
//   tierd-metrics-demo [--listen 127.0.0.1:0] [--workloads redis,gapbs] [--max-seconds 300]
// Prints "listening on port N" on stdout once serving, then feeds new values every 250 ms until
// SIGTERM/SIGINT or --max-seconds passed (a bound so a crashed test never leaves it running).
#include <poll.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/metrics/DemoValues.h"
#include "telemetry/metrics/PrometheusSink.h"
#include "tierd/core/Numbers.h"

namespace {
volatile sig_atomic_t gStop = 0;
void onSignal(int) {
  gStop = 1;
}
}  // namespace

namespace {

int run(int argc, char** argv) {
  using namespace tierd::telemetry;
  ExporterOptions options;
  options.listenAddress = "127.0.0.1:0";
  std::vector<std::string> workloads = {"redis", "gapbs"};
  long maxSeconds = 300;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "tierd-metrics-demo: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen") {
      options.listenAddress = value();
    } else if (a == "--basic-auth-file") {
      options.basicAuthFile = value();
    } else if (a == "--workloads") {
      workloads.clear();
      std::stringstream ss(value());
      for (std::string w; std::getline(ss, w, ',');)
        if (!w.empty()) workloads.push_back(w);
    } else if (a == "--max-seconds") {
      auto n = tierd::parseU64InRange(value(), 0, 86400, "--max-seconds");
      if (!n) {
        std::cerr << "tierd-metrics-demo: " << n.error().describe() << "\n";
        return 2;
      }
      maxSeconds = static_cast<long>(*n);
    } else {
      std::cerr << "usage: tierd-metrics-demo [--listen ADDR] [--basic-auth-file FILE] "
                   "[--workloads a,b] [--max-seconds N]\n";
      return 2;
    }
  }
  auto sink = PrometheusSink::start(options);
  if (!sink) {
    std::cerr << "tierd-metrics-demo: " << sink.error().describe() << "\n";
    return 1;
  }
  signal(SIGTERM, onSignal);
  signal(SIGINT, onSignal);
  (*sink)->setWorkloads(workloads);
  DemoFeeder feeder;
  feeder.feed(**sink, workloads);
  std::cout << "listening on port " << (*sink)->port() << std::endl;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(maxSeconds);
  while (!gStop && std::chrono::steady_clock::now() < deadline) {
    poll(nullptr, 0, 250);
    feeder.feed(**sink, workloads);
  }
  return 0;
}

}  // namespace

// An exception nothing handled (prometheus-cpp's registry throws, std::bad_alloc) ends in one line
// and the exit code of an internal error (70, EX_SOFTWARE, as tierd's and tierctl's MainGuard),
// not in std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tierd-metrics-demo: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tierd-metrics-demo: fatal: unknown exception\n");
  }
  return tierd::kExitInternal;
}

// tierd-hotset: where a workload's known hot set lives, for the rig's tiering scenarios.
//
// Reads the hot-set file written by tierd-gups ("pid N", then one "start-end" hex range per
// line), asks move_pages(2) with nodes=NULL for the node of one address per 2 MiB chunk (one per
// THP: move_pages(2) answers -EBUSY for a THP's later subpages), and prints one line:
//   hot_bytes=N on_fast_bytes=N hot_on_fast_pct=P not_present=N
// where "fast" is the node set given with --fast (default 0). Exit 0 on success, 1 when the
// process or the file cannot be read or parsed.
// --move-to NODE first moves the hot set there with one move_pages(2) call (one address per
// 2 MiB chunk) and prints "moved_bytes=N not_moved=N" before that line: scripts/bench's ideal
// arm, an oracle placement (tierctl move takes one range a call, and every process start is slow
// under TCG).
#include <numa.h>
#include <numaif.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "telemetry/hotness/HeatRegions.h"
#include "tierd/core/Units.h"
#include "tierd/sys/Parsers.h"

int main(int argc, char** argv) {
  std::string file;
  std::set<int> fast = {0};
  int moveTo = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hot-set" && i + 1 < argc) {
      file = argv[++i];
    } else if (a == "--fast" && i + 1 < argc) {
      auto ids = tierd::sys::parseIdList(argv[++i], "--fast");
      if (!ids) {
        std::cerr << "tierd-hotset: " << ids.error().describe() << "\n";
        return 2;
      }
      fast = ids.value();
    } else if (a == "--move-to" && i + 1 < argc) {
      auto n = tierd::sys::parseU64(argv[++i], "--move-to");
      if (!n || n.value() > 1023) {
        std::cerr << "tierd-hotset: --move-to needs a node id\n";
        return 2;
      }
      moveTo = static_cast<int>(n.value());
    } else {
      std::cerr << "usage: tierd-hotset --hot-set FILE [--fast NODELIST] [--move-to NODE]\n";
      return 2;
    }
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "tierd-hotset: cannot read " << file << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  // The one strict hot-set parser (telemetry/hotness/HeatRegions.h): a malformed line is an error
  // naming file:line, never a guess.
  auto truth = tierd::telemetry::parseHotSet(text.str(), file);
  if (!truth) {
    std::cerr << "tierd-hotset: " << truth.error().describe() << "\n";
    return 1;
  }
  const pid_t pid = truth->pid;
  std::vector<void*> pages;
  for (const auto& [start, end] : truth->ranges)
    for (uint64_t a = start; a < end; a += 2 * tierd::kMiB)
      pages.push_back(reinterpret_cast<void*>(a));
  if (pages.empty()) {
    std::cerr << "tierd-hotset: no ranges in " << file << "\n";
    return 1;
  }
  std::vector<int> status(pages.size(), 0);
  const uint64_t chunk = 2 * tierd::kMiB;
  if (moveTo >= 0) {
    std::vector<int> nodes(pages.size(), moveTo);
    long moved =
        numa_move_pages(pid, pages.size(), pages.data(), nodes.data(), status.data(), MPOL_MF_MOVE);
    if (moved < 0) {
      std::perror("tierd-hotset: move_pages");
      return 1;
    }
    uint64_t there = 0;
    for (int s : status)
      there += s == moveTo;
    std::printf("moved_bytes=%llu not_moved=%llu\n", static_cast<unsigned long long>(there * chunk),
                static_cast<unsigned long long>(pages.size() - there));
  }
  long rc = numa_move_pages(pid, pages.size(), pages.data(), nullptr, status.data(), 0);
  if (rc < 0) {
    std::perror("tierd-hotset: move_pages");
    return 1;
  }
  uint64_t onFast = 0, notPresent = 0;
  for (int s : status) {
    if (s < 0)
      ++notPresent;
    else if (fast.count(s))
      ++onFast;
  }
  std::printf("hot_bytes=%llu on_fast_bytes=%llu hot_on_fast_pct=%.1f not_present=%llu\n",
              static_cast<unsigned long long>(pages.size() * chunk),
              static_cast<unsigned long long>(onFast * chunk),
              100.0 * static_cast<double>(onFast) / static_cast<double>(pages.size()),
              static_cast<unsigned long long>(notPresent));
  return 0;
}

// `tierctl locate --pid PID [--json] [--verbose]`: where a process's memory lives, per node and
// page size (Migrator::locate; JSON fields in docs/migrate.md).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "tierd/cli/Args.h"
#include "tierd/cli/Command.h"
#include "tierd/cli/ValueParsers.h"
#include "tierd/core/Units.h"
#include "tierd/migrate/LocateUsage.h"
#include "tierd/migrate/MovePagesMigrator.h"
#include "tierd/sys/Parsers.h"
#include "tierd/sys/ProcMaps.h"

namespace tierd::cli {
namespace {

std::string hexAddr(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A PageUsage as JSON (docs/migrate.md): bytes per node and page kind, present, not present,
// no page, and other statuses.
nlohmann::json usageJson(const migrate::PageUsage& u) {
  nlohmann::json j = nlohmann::json::object();
  j["nodes"] = nlohmann::json::object();
  for (const auto& [n, kinds] : u.nodes)
    j["nodes"][std::to_string(n)] = kinds;
  j["present_bytes"] = u.present();
  for (const char* k : {"not_present", "no_page"})
    j[std::string(k) + "_bytes"] = u.absent.count(k) ? u.absent.at(k) : 0;
  nlohmann::json other = nlohmann::json::object();
  for (const auto& [k, b] : u.absent)
    if (k != "not_present" && k != "no_page") other[k] = b;
  j["other_status_bytes"] = other;
  return j;
}

}  // namespace

int locateCommand(const std::vector<std::string>& args, size_t begin) {
  const CommandSpec spec = {"tierctl locate",
                            "usage: tierctl locate --pid PID [--json] [--verbose]\n\nBytes of "
                            "the process's memory per node and page kind (4k, thp, "
                            "hugetlb-2M, hugetlb-1G).\n",
                            {
                                {"pid", true, "process id", "PID"},
                                kMigrateJsonOption,
                                {"verbose", false, "also list every VMA"},
                                kSysRootOption,
                            }};
  int code = 0;
  auto parsed = parseCommand(spec, args, begin, code);
  if (!parsed) return code;
  auto pidArg = parsed->pid("pid");
  if (!pidArg) return fail(spec, pidArg.error(), 2);
  const pid_t pid = pidArg.value();
  sys::SysRoot root(parsed->get("sys-root").value_or("/"));
  migrate::MovePagesMigrator mig({}, migrate::makeLinuxPageSystem(root));
  const uint64_t base = mig.system().basePageSize();
  const uint64_t thp = mig.system().thpSize();

  auto maps = sys::readSmaps(root, pid);  // smaps: page sizes and AnonHugePages per VMA
  if (!maps) {
    return fail(spec, maps.error(), 1);
  }
  std::vector<sys::SmapsVma> vmas;
  for (const auto& v : maps.value())
    if (v.path != "[vsyscall]") vmas.push_back(v);
  std::vector<AddressRange> ranges;
  ranges.reserve(vmas.size());
  for (const auto& v : vmas)
    ranges.push_back({v.start, v.size()});
  auto loc = mig.locate(pid, ranges);
  if (!loc) {
    return fail(spec, loc.error(), 1);
  }

  const std::vector<migrate::PageUsage> perVma = migrate::attributeRuns(*loc, vmas, base, thp);
  migrate::PageUsage total;
  for (const migrate::PageUsage& u : perVma)
    total.add(u);

  if (parsed->has("json")) {
    nlohmann::json j = usageJson(total);
    j["pid"] = pid;
    j["base_page_size"] = base;
    j["query_calls"] = loc->queryCalls;
    j["queried_pages"] = loc->queriedPages;
    j["skipped_bytes"] = loc->skippedBytes;
    j["pagemap_pages"] = loc->pagemapPages;
    j["pfn_pages"] = loc->pfnPages;
    uint64_t unscanned = 0;
    for (const auto& u : loc->unscanned)
      unscanned += u.length;
    j["unscanned_bytes"] = unscanned;
    if (parsed->has("verbose")) {
      j["vmas"] = nlohmann::json::array();
      for (size_t i = 0; i < vmas.size(); ++i) {
        nlohmann::json v = usageJson(perVma[i]);
        v["start"] = hexAddr(vmas[i].start);
        v["end"] = hexAddr(vmas[i].end);
        v["perms"] = vmas[i].perms;
        v["path"] = vmas[i].path;
        v["kernel_page_size"] = vmas[i].kernelPageSize;
        v["anon_huge_pages_bytes"] = vmas[i].anonHugePages;
        j["vmas"].push_back(std::move(v));
      }
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto line = [](const migrate::PageUsage& u) {
    std::string s;
    for (const auto& [n, kinds] : u.nodes)
      for (const auto& [k, b] : kinds)
        s += "  node" + std::to_string(n) + "/" + k + " " + formatBytes(b);
    for (const auto& [k, b] : u.absent)
      s += "  " + k + " " + formatBytes(b);
    return s;
  };
  std::cout << "pid " << pid << ": " << formatBytes(total.present()) << " present\n";
  std::printf("  %-6s %-10s %14s\n", "node", "page", "bytes");
  for (const auto& [n, kinds] : total.nodes)
    for (const auto& [k, b] : kinds)
      std::printf("  %-6d %-10s %14s\n", n, k.c_str(), formatBytes(b).c_str());
  for (const auto& [k, b] : total.absent)
    std::printf("  %-12s %14s\n", k.c_str(), formatBytes(b).c_str());
  std::cout << "  (" << loc->queriedPages << " pages queried in " << loc->queryCalls
            << " move_pages calls; " << formatBytes(loc->skippedBytes)
            << " answered from numa_maps)\n";
  for (const auto& u : loc->unscanned)
    std::cout << "  not scanned (sparse, larger than the scan limit): " << hexAddr(u.start) << "-"
              << hexAddr(u.start + u.length) << " " << formatBytes(u.length) << "\n";
  if (parsed->has("verbose"))
    for (size_t i = 0; i < vmas.size(); ++i)
      std::cout << hexAddr(vmas[i].start) << "-" << hexAddr(vmas[i].end) << " " << vmas[i].perms
                << " " << (vmas[i].path.empty() ? "[anon]" : vmas[i].path) << line(perVma[i])
                << "\n";
  return 0;
}

}  // namespace tierd::cli

#include "tierd/topology/KernelTiering.h"

#include <algorithm>

#include "tierd/sys/Parsers.h"

namespace tierd::topology {

std::string numaBalancingTieringActive(std::optional<int> numaBalancing) {
  if (numaBalancing && (*numaBalancing & 2))
    return "kernel.numa_balancing=" + std::to_string(*numaBalancing) +
           " (NUMA_BALANCING_MEMORY_TIERING)";
  return "";
}

std::string damosTieringActive(const sys::SysRoot& root, std::string_view nrKdamonds) {
  const std::string kd = "/sys/kernel/mm/damon/admin/kdamonds";
  auto n = sys::parseU64(nrKdamonds, kd);
  for (uint64_t k = 0; n && k < std::min<uint64_t>(n.value(), 256); ++k) {
    const std::string d = kd + "/" + std::to_string(k);
    if (sys::readDamonAttr(root, d + "/state").valueOr("") != "on") continue;
    auto ns = root.readAttr(d + "/contexts/0/schemes/nr_schemes");
    auto schemes = ns ? sys::parseU64(ns.value(), d) : Result<uint64_t>(ns.error());
    for (uint64_t s = 0; schemes && s < std::min<uint64_t>(schemes.value(), 256); ++s) {
      const std::string action =
          root.readAttr(d + "/contexts/0/schemes/" + std::to_string(s) + "/action").valueOr("");
      if (action == "migrate_hot" || action == "migrate_cold")
        return "kdamond " + std::to_string(k) + " runs DAMOS " + action;
    }
  }
  return "";
}

KernelTiering KernelTieringWatch::check(const sys::SysRoot& root, const Capabilities& caps,
                                        bool allowKernelTiering) {
  // numa_balancing every tick (the topology read it). The kdamonds' schemes when nr_kdamonds
  // changed, every tick while a DAMOS tiering scheme was seen, else every kRescanTicks ticks: a
  // kdamond created by someone else changes nr_kdamonds (and cannot be while tierd's run:
  // writing it fails), so what waits for the rescan is only an existing kdamond given a migrate
  // scheme or turned on again.
  KernelTiering out;
  out.active = numaBalancingTieringActive(caps.numaBalancing);
  if (out.active.empty()) {
    std::string nr = root.readAttr("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds").valueOr("");
    if (nr != kdamondsSeen_ || !damos_.empty() || ++checksSinceScan_ >= kRescanTicks) {
      damos_ = damosTieringActive(root, nr);
      kdamondsSeen_ = std::move(nr);
      checksSinceScan_ = 0;
    }
    out.active = damos_;
  }
  out.held = !out.active.empty() && !allowKernelTiering;
  if (out.active != reported_) {
    if (!out.active.empty())
      out.problem =
          "the kernel's own tiering runs (" + out.active + "): " +
          (out.held
               ? "tierd moves nothing while it does (migration.allow_kernel_tiering = true to "
                 "move anyway)"
               : "moving anyway (migration.allow_kernel_tiering = true); both fight over pages");
    reported_ = out.active;
  }
  return out;
}

}  // namespace tierd::topology

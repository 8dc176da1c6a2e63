#include "tierd/core/Units.h"

#include <cstdio>

namespace tierd {

std::string formatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < kKiB) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

std::string pageKindName(PageKind kind, uint64_t bytes) {
  switch (kind) {
    case PageKind::Base:
      return pageSizeName(bytes);
    case PageKind::Thp:
      return "thp";
    case PageKind::Hugetlb:
      return "hugetlb-" + pageSizeName(bytes);
  }
  return pageSizeName(bytes);
}

std::string pageSizeName(uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "G";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "M";
  return std::to_string(bytes / kKiB) + "k";
}

}  // namespace tierd

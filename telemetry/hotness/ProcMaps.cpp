#include "telemetry/hotness/ProcMaps.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include "tierd/sys/Parsers.h"

namespace tierd::telemetry {

namespace {

bool parseHex(std::string_view s, uint64_t& v) {
  auto n = sys::parseHexDigits(s);
  if (n) v = *n;
  return n.has_value();
}

}  // namespace

Result<std::vector<Mapping>> parseMaps(std::string_view text, const std::string& context) {
  std::vector<Mapping> out;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineNo;
    if (line.empty()) continue;
    std::istringstream in{std::string(line)};
    std::string range, perms, offset, dev, inode;
    in >> range >> perms >> offset >> dev >> inode;
    size_t dash = range.find('-');
    Mapping m;
    if (inode.empty() || dash == std::string::npos ||
        !parseHex(std::string_view(range).substr(0, dash), m.start) ||
        !parseHex(std::string_view(range).substr(dash + 1), m.end) || m.end <= m.start)
      return Error::input("malformed maps line '" + std::string(line) + "'",
                          context + ":" + std::to_string(lineNo));
    m.perms = perms;
    std::getline(in >> std::ws, m.path);
    out.push_back(std::move(m));
  }
  return out;
}

bool AddressFilter::contains(pid_t pid, uint64_t addr, uint64_t nowNs) {
  if (addr == 0) return false;
  Entry& e = cache_[pid];
  if (e.readNs == 0 || nowNs - e.readNs >= refreshNs_) {
    const std::string path = "/proc/" + std::to_string(pid) + "/maps";
    auto text = root_.read(path);
    e.maps.clear();
    if (text) {
      auto maps = parseMaps(text.value(), root_.path(path));
      if (maps) e.maps = std::move(maps.value());
    }
    e.readNs = nowNs == 0 ? 1 : nowNs;
  }
  auto it = std::upper_bound(e.maps.begin(), e.maps.end(), addr,
                             [](uint64_t a, const Mapping& m) { return a < m.start; });
  if (it == e.maps.begin()) return false;
  --it;
  return addr >= it->start && addr < it->end;
}

}  // namespace tierd::telemetry

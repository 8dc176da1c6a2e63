#include "tierd/sys/MemoryBlocks.h"

#include <cerrno>
#include <charconv>
#include <set>
#include <string>
#include <vector>

namespace tierd::sys {

namespace {

// The number after `prefix` in `name` ("node12" -> 12), nullopt when `name` is not exactly that.
std::optional<uint64_t> numberAfter(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return {};
  uint64_t v = 0;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return {};
  return v;
}

}  // namespace

std::optional<NodeId> MemoryBlockNodes::nodeOfPfn(uint64_t pfn, uint64_t pageBytes) const {
  if (blockBytes == 0 || pageBytes == 0) return std::nullopt;
  auto it = nodeOfBlock.find(pfn / (blockBytes / pageBytes));
  if (it == nodeOfBlock.end()) return std::nullopt;
  return it->second;
}

Result<MemoryBlockNodes> readMemoryBlockNodes(const SysRoot& root) {
  const std::string sizeFile = "/sys/devices/system/memory/block_size_bytes";
  auto text = root.readAttr(sizeFile);
  if (!text) return text.error();
  MemoryBlockNodes out;
  const std::string& s = text.value();
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out.blockBytes, 16);
  if (ec != std::errc() || p != s.data() + s.size() || out.blockBytes == 0)
    return Error::input("not a positive hex number: '" + s + "'", root.path(sizeFile));

  const std::string nodeDir = "/sys/devices/system/node";
  auto nodes = root.list(nodeDir);
  if (!nodes) return nodes.error();
  std::map<uint64_t, std::set<NodeId>> listed;
  bool anyNode = false;
  for (const std::string& n : nodes.value()) {
    auto node = numberAfter(n, "node");
    if (!node) continue;
    anyNode = true;
    auto entries = root.list(nodeDir + "/" + n);
    if (!entries) return entries.error();
    for (const std::string& e : entries.value())
      if (auto block = numberAfter(e, "memory")) listed[*block].insert(static_cast<NodeId>(*node));
  }
  if (!anyNode) return Error::sys(ENOENT, "no nodeN directory", root.path(nodeDir));
  for (const auto& [block, by] : listed) {
    if (by.size() == 1)
      out.nodeOfBlock.emplace(block, *by.begin());
    else
      ++out.ambiguousBlocks;
  }
  return out;
}

}  // namespace tierd::sys

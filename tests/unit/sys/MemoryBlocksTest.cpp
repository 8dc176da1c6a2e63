#include <doctest/doctest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "tierd/sys/MemoryBlocks.h"

using namespace tierd;
namespace fs = std::filesystem;

namespace {
// A SysRoot tree with sysfs's memory block layout: block_size_bytes and nodeN/memoryM entries
// (symlinks on the kernel; plain directories serve the same listing here).
struct BlockTree {
  fs::path root;
  BlockTree() {
    char name[] = "/tmp/tierd-blocks-XXXXXX";
    REQUIRE(::mkdtemp(name));
    root = name;
    fs::create_directories(root / "sys/devices/system/memory");
    fs::create_directories(root / "sys/devices/system/node");
  }
  ~BlockTree() { fs::remove_all(root); }
  void blockSize(const std::string& text) {
    std::ofstream(root / "sys/devices/system/memory/block_size_bytes") << text;
  }
  void block(int node, int block) {
    fs::create_directories(root / ("sys/devices/system/node/node" + std::to_string(node)) /
                           ("memory" + std::to_string(block)));
  }
};
}  // namespace

TEST_CASE("readMemoryBlockNodes: each block's node, a block under two nodes is ambiguous") {
  BlockTree t;
  t.blockSize("8000000\n");  // 128 MiB, as x86-64 shows it
  t.block(0, 0);
  t.block(0, 1);
  t.block(0, 4);  // a block listed under both nodes: it spans their boundary
  t.block(1, 4);
  t.block(1, 5);
  fs::create_directories(t.root / "sys/devices/system/node/node1/memory_failure");
  fs::create_directories(t.root / "sys/devices/system/node/possible");
  auto m = sys::readMemoryBlockNodes(sys::SysRoot(t.root.string()));
  REQUIRE(m.ok());
  CHECK(m->blockBytes == 128ull << 20);
  CHECK(m->nodeOfBlock == std::map<uint64_t, NodeId>{{0, 0}, {1, 0}, {5, 1}});
  CHECK(m->ambiguousBlocks == 1);
  const uint64_t page = 4096, perBlock = (128ull << 20) / page;
  CHECK(m->nodeOfPfn(0, page) == 0);
  CHECK(m->nodeOfPfn(2 * perBlock - 1, page) == 0);
  CHECK_FALSE(m->nodeOfPfn(2 * perBlock, page));  // block 2: offline or not present
  CHECK_FALSE(m->nodeOfPfn(4 * perBlock, page));  // ambiguous
  CHECK(m->nodeOfPfn(5 * perBlock + 7, page) == 1);
}

TEST_CASE("readMemoryBlockNodes: errors name the file") {
  BlockTree t;
  auto missing = sys::readMemoryBlockNodes(sys::SysRoot(t.root.string()));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == ErrorKind::Environment);
  t.blockSize("0\n");
  auto zero = sys::readMemoryBlockNodes(sys::SysRoot(t.root.string()));
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().kind == ErrorKind::Input);
  CHECK(zero.error().describe().find("block_size_bytes") != std::string::npos);
  t.blockSize("8000000x\n");
  CHECK_FALSE(sys::readMemoryBlockNodes(sys::SysRoot(t.root.string())).ok());
  t.blockSize("8000000\n");
  auto noNodes = sys::readMemoryBlockNodes(sys::SysRoot(t.root.string()));
  REQUIRE_FALSE(noNodes.ok());
  CHECK(noNodes.error().code == ENOENT);
}

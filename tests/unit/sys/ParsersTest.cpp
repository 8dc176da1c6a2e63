#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "tierd/sys/Parsers.h"

using namespace tierd;
using namespace tierd::sys;

TEST_CASE("parseU64 and parseI64 are strict") {
  CHECK(parseU64(" 42\n", "f").value() == 42);
  CHECK(parseI64("-7", "f").value() == -7);
  for (const char* bad : {"", "  ", "4x", "x4", "-1", "+1", "1 2", "18446744073709551616"}) {
    INFO("input: '" << bad << "'");
    auto r = parseU64(bad, "/sys/f");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::Input);
    CHECK(r.error().context == "/sys/f");
  }
  CHECK_FALSE(parseI64("9223372036854775808", "f").ok());
  auto e = parseU64("abc", "/sys/x");
  CHECK(e.error().describe() == "/sys/x: expected an unsigned integer, got 'abc'");
}

TEST_CASE("parseIdList reads the kernel's cpulist format") {
  CHECK(parseIdList("0-3,8,10-11\n", "f").value() == std::set<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parseIdList("\n", "f").value().empty());
  CHECK(parseIdList("0,1,16-17", "f").value() == std::set<int>{0, 1, 16, 17});
  for (const char* bad : {"0-", "-1", "3-1", "0,,1", "a", "0-3,", "1 2"}) {
    INFO("input: '" << bad << "'");
    auto r = parseIdList(bad, "/sys/devices/system/node/online");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context == "/sys/devices/system/node/online");
    CHECK(r.error().message.find(bad) != std::string::npos);
  }
  CHECK(formatIdList({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(formatIdList({}) == "");
}

TEST_CASE("parseMeminfo reads /proc/meminfo and node meminfo in bytes") {
  auto node = parseMeminfo(
      "Node 1 MemTotal:        4194304 kB\nNode 1 MemFree:         4000000 kB\n"
      "Node 1 HugePages_Total:     2\n",
      "f");
  REQUIRE(node.ok());
  CHECK(node->at("MemTotal") == 4194304ull * 1024);
  CHECK(node->at("MemFree") == 4000000ull * 1024);
  CHECK(node->at("HugePages_Total") == 2);
  auto proc = parseMeminfo("MemTotal:       16384 kB\nHugePages_Free:        0\n", "f");
  REQUIRE(proc.ok());
  CHECK(proc->at("MemTotal") == 16384ull * 1024);
  auto bad = parseMeminfo("Node 0 MemTotal: 10 kB\nNode 0 MemFree: lots kB\n", "/n/meminfo");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().context == "/n/meminfo:2");
  CHECK_FALSE(parseMeminfo("MemTotal 12 kB\n", "f").ok());
  CHECK_FALSE(parseMeminfo("MemTotal: 12 MB\n", "f").ok());
}

TEST_CASE("parseKeyValue reads vmstat-style files") {
  auto r = parseKeyValue("pgmigrate_success 10\npgpromote_success 3\n\n", "f");
  REQUIRE(r.ok());
  CHECK(r->at("pgmigrate_success") == 10);
  CHECK(r->size() == 2);
  auto bad = parseKeyValue("a 1\nb\n", "/proc/vmstat");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().context == "/proc/vmstat:2");
  CHECK_FALSE(parseKeyValue("a 1 2\n", "f").ok());
}

TEST_CASE("parseBracketChoice finds the active THP mode") {
  CHECK(parseBracketChoice("always [madvise] never\n", "f").value() == "madvise");
  CHECK(parseBracketChoice("[always] madvise never", "f").value() == "always");
  CHECK_FALSE(parseBracketChoice("always madvise never", "f").ok());
  CHECK_FALSE(parseBracketChoice("[always] [madvise] never", "f").ok());
  CHECK_FALSE(parseBracketChoice("", "f").ok());
}

TEST_CASE("parseU64Row and parseKbSize") {
  CHECK(parseU64Row("10 20 40\n", "f").value() == std::vector<uint64_t>{10, 20, 40});
  CHECK_FALSE(parseU64Row("10 x", "f").ok());
  CHECK_FALSE(parseU64Row("", "f").ok());
  CHECK(parseKbSize("2048kB", "f").value() == 2097152);
  CHECK(parseKbSize("1048576kB", "f").value() == 1073741824);
  CHECK_FALSE(parseKbSize("2048", "f").ok());
  CHECK_FALSE(parseKbSize("0kB", "f").ok());
  CHECK_FALSE(parseKbSize("kB", "f").ok());
}

TEST_CASE("parseHexDigits: 1..16 hex digits, lower case unless asked, nothing else") {
  CHECK(sys::parseHexDigits("7f0000000000").value() == 0x7f0000000000ULL);
  CHECK(sys::parseHexDigits("ffffffffffffffff").value() == UINT64_MAX);
  CHECK_FALSE(sys::parseHexDigits("1ffffffffffffffff"));  // 17 digits: overflow
  CHECK_FALSE(sys::parseHexDigits(""));
  CHECK_FALSE(sys::parseHexDigits("0x10"));  // callers strip prefixes
  CHECK_FALSE(sys::parseHexDigits(" 10"));
  CHECK_FALSE(sys::parseHexDigits("7F"));
  CHECK(sys::parseHexDigits("7F", /*upperOk=*/true).value() == 0x7f);
  CHECK_FALSE(sys::parseHexDigits("7g", true));
}

TEST_CASE("parseBuddyinfo reads free blocks per node, zone and order from a real capture") {
  const std::string path = std::string(TIERD_FIXTURES) + "/proc/buddyinfo-1node";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto zones = parseBuddyinfo(ss.str(), path);
  REQUIRE_MESSAGE(zones.ok(), zones.error().describe());
  REQUIRE(zones->size() == 3);
  CHECK(zones->at(2).node == 0);
  CHECK(zones->at(2).zone == "Normal");
  REQUIRE(zones->at(2).freeBlocks.size() == 11);
  CHECK(zones->at(2).freeBlocks[0] == 17995);
  CHECK(zones->at(2).freeBlocks[10] == 6);

  // Order 9 and up with 4 KiB pages: 2 MiB blocks (x1) and 4 MiB blocks (x2), every zone.
  const auto& z = zones.value();
  uint64_t blocks2M = 0;
  for (const BuddyZone& b : z)
    blocks2M += b.freeBlocks[9] + 2 * b.freeBlocks[10];
  CHECK(freeBytesAtOrder(z, 0, 9, 4096) == blocks2M * 2 * 1024 * 1024);
  CHECK(freeBytesAtOrder(z, 1, 9, 4096) == 0);  // no such node
  CHECK(freeBytesAtOrder(z, 0, 0, 4096) > freeBytesAtOrder(z, 0, 9, 4096));

  const std::string two =
      "Node 0, zone   Normal      1      0      2\n"
      "Node 16, zone  Movable      0      0      3\n";
  auto sparse = parseBuddyinfo(two, "/proc/buddyinfo");
  REQUIRE(sparse.ok());
  CHECK(sparse->at(1).node == 16);
  CHECK(freeBytesAtOrder(sparse.value(), 16, 2, 4096) == 3 * 4 * 4096);

  for (const char* bad : {"Node 0 zone Normal 1 2\n", "Node x, zone Normal 1\n",
                          "Node 0, zone Normal\n", "Node 0, zone Normal 1 -2\n",
                          "Node 0, zone Normal 1 2\nNode 1, zone Normal 1\n", "garbage\n"}) {
    INFO("input: " << bad);
    auto r = parseBuddyinfo(bad, "/proc/buddyinfo");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context.rfind("/proc/buddyinfo:", 0) == 0);
  }
}

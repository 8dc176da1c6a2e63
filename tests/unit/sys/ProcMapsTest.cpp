#include <doctest/doctest.h>

#include "tierd/core/Units.h"
#include "tierd/sys/ProcMaps.h"

using namespace tierd;
using namespace tierd::sys;

namespace {
const SysRoot kRoot(TIERD_FIXTURES);
constexpr pid_t kPid = 4242;

template <typename V>
const V* at(const std::vector<V>& vs, uint64_t start) {
  for (const auto& v : vs)
    if (v.start == start) return &v;
  return nullptr;
}
}  // namespace

TEST_CASE("readSmaps parses a real capture: 4k, THP and hugetlb VMAs") {
  auto r = readSmaps(kRoot, kPid);
  REQUIRE(r.ok());
  CHECK(r->size() == 28);

  const SmapsVma* anon = at(*r, 0x7f1e8c000000);
  REQUIRE(anon);
  CHECK(anon->end == 0x7f1e8c800000);
  CHECK(anon->perms == "rw-p");
  CHECK(anon->path == "");
  CHECK(anon->rss == 4 * kMiB);
  CHECK(anon->anonHugePages == 0);
  CHECK(anon->kernelPageSize == 4 * kKiB);
  CHECK(anon->thpEligible == false);
  CHECK(anon->vmFlags.count("nh") == 1);
  CHECK_FALSE(anon->hugetlb());

  const SmapsVma* thp = at(*r, 0x7f1e8b400000);
  REQUIRE(thp);
  CHECK(thp->size() == 8 * kMiB);
  CHECK(thp->rss == 6 * kMiB);
  CHECK(thp->anonHugePages == 6 * kMiB);
  CHECK(thp->kernelPageSize == 4 * kKiB);
  CHECK(thp->thpEligible == true);
  CHECK(thp->vmFlags.count("hg") == 1);

  const SmapsVma* huge = at(*r, 0x7f1e8b000000);
  REQUIRE(huge);
  CHECK(huge->hugetlb());
  CHECK(huge->path == "/anon_hugepage (deleted)");
  CHECK(huge->inode == 34859);
  CHECK(huge->dev == "00:11");
  CHECK(huge->kernelPageSize == 2 * kMiB);
  CHECK(huge->mmuPageSize == 2 * kMiB);
  CHECK(huge->rss == 0);
  CHECK(huge->fields.at("Private_Hugetlb") == 2 * kMiB);

  const SmapsVma* libc = nullptr;
  for (const auto& v : *r)
    if (v.path == "/usr/lib/x86_64-linux-gnu/libc.so.6" && v.perms == "r-xp") libc = &v;
  REQUIRE(libc);
  CHECK(libc->offset == 0x26000);
}

TEST_CASE("readMaps matches the smaps header lines") {
  auto m = readMaps(kRoot, kPid);
  auto s = readSmaps(kRoot, kPid);
  REQUIRE(m.ok());
  REQUIRE(s.ok());
  REQUIRE(m->size() == s->size());
  for (size_t i = 0; i < m->size(); ++i) {
    CHECK((*m)[i].start == (*s)[i].start);
    CHECK((*m)[i].end == (*s)[i].end);
    CHECK((*m)[i].path == (*s)[i].path);
    CHECK_FALSE((*m)[i].hasCounters);
  }
}

TEST_CASE("readNumaMaps parses a real capture") {
  auto r = readNumaMaps(kRoot, kPid);
  REQUIRE(r.ok());
  CHECK(r->size() == 27);  // smaps also lists [vsyscall], numa_maps does not

  const NumaMapsVma* thp = at(*r, 0x7f1e8b400000);
  REQUIRE(thp);
  CHECK(thp->policy == "default");
  CHECK(thp->pagesPerNode == std::map<int, uint64_t>{{0, 1536}});
  CHECK(thp->presentPages() == 1536);  // THP counted in base pages
  CHECK(thp->kernelPageSize == 4 * kKiB);
  CHECK(thp->counts.at("anon") == 1536);
  CHECK(thp->counts.at("dirty") == 1536);
  CHECK_FALSE(thp->huge);

  const NumaMapsVma* huge = at(*r, 0x7f1e8b000000);
  REQUIRE(huge);
  CHECK(huge->huge);
  CHECK(huge->file == "/anon_hugepage\\040(deleted)");
  CHECK(huge->pagesPerNode.at(0) == 1);
  CHECK(huge->kernelPageSize == 2 * kMiB);

  const NumaMapsVma* empty = at(*r, 0x7f1e8bc00000);
  REQUIRE(empty);
  CHECK(empty->pagesPerNode.empty());
  CHECK(empty->kernelPageSize == 0);

  const NumaMapsVma* heap = at(*r, 0x56101dd25000);
  REQUIRE(heap);
  CHECK(heap->heap);
  const NumaMapsVma* libc = at(*r, 0x7f1e8c8bd000);
  REQUIRE(libc);
  CHECK(libc->counts.at("mapped") == 227);
  CHECK(libc->counts.at("mapmax") == 21);
}

TEST_CASE("numa_maps policies with blanks, flags and node lists") {
  auto r = parseNumaMaps(
      "1000 prefer (many):1-2 anon=1 N1=1 kernelpagesize_kB=4\n"
      "2000 weighted interleave:0-1 N0=2 N1=2 kernelpagesize_kB=4\n"
      "3000 bind=static:1 stack anon=3 N1=3 kernelpagesize_kB=64\n"
      "4000 interleave:0,16 N16=1 N0=1 kernelpagesize_kB=4\n",
      "f");
  REQUIRE(r.ok());
  CHECK((*r)[0].policy == "prefer (many):1-2");
  CHECK((*r)[1].policy == "weighted interleave:0-1");
  CHECK((*r)[1].presentPages() == 4);
  CHECK((*r)[2].policy == "bind=static:1");
  CHECK((*r)[2].stack);
  CHECK((*r)[2].kernelPageSize == 64 * kKiB);
  CHECK((*r)[3].pagesPerNode == std::map<int, uint64_t>{{0, 1}, {16, 1}});
}

TEST_CASE("proc map parsers reject malformed input with path and line") {
  struct Bad {
    const char* text;
    const char* where;
  };
  for (Bad b : {Bad{"1000 default N0=1\n2000 nonsense N0=1\n", "/proc/1/numa_maps:2"},
                Bad{"1000 default N0=x\n", "/proc/1/numa_maps:1"},
                Bad{"1000 default Nx=1\n", "/proc/1/numa_maps:1"},
                Bad{"1000 default weird\n", "/proc/1/numa_maps:1"},
                Bad{"zz default N0=1\n", "/proc/1/numa_maps:1"},
                Bad{"2000 default\n1000 default\n", "/proc/1/numa_maps:2"}}) {
    INFO(b.text);
    auto r = parseNumaMaps(b.text, "/proc/1/numa_maps");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context == b.where);
    CHECK(r.error().kind == ErrorKind::Input);
  }
  const char* head = "1000-3000 rw-p 00000000 00:00 0\n";
  for (Bad b : {Bad{"1000-3000 rw-p 00000000 00:00 0\nRss: 4 kB\n", "/proc/1/smaps:1"},
                Bad{"1000-3000 rwzp 00000000 00:00 0\nKernelPageSize: 4 kB\n", "/proc/1/smaps:1"},
                Bad{"3000-1000 rw-p 00000000 00:00 0\n", "/proc/1/smaps:1"},
                Bad{"Rss: 4 kB\n", "/proc/1/smaps:1"},
                Bad{"1000-3000 rw-p 00000000 00:00 0\nKernelPageSize: 4 MB\n", "/proc/1/smaps:2"},
                Bad{"1000-3000 rw-p 00000000 00:00 0\nKernelPageSize: 4 kB\nRss: x kB\n",
                    "/proc/1/smaps:3"},
                Bad{"1000-3000 rw-p 00000000 00:00 0\nKernelPageSize: 4 kB\nSize: 4 kB\n",
                    "/proc/1/smaps:1"},
                Bad{"1000-3000 rw-p 00000000 00:00 0\nKernelPageSize: 4 kB\nVmFlags: rd wrx\n",
                    "/proc/1/smaps:3"}}) {
    INFO(b.text);
    auto r = parseSmaps(b.text, "/proc/1/smaps");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().context == b.where);
  }
  CHECK(parseMaps(head, "m").ok());
  auto bad = parseMaps("1000-3000 rw-p 00000000 0000 0\n", "/proc/1/maps");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().context == "/proc/1/maps:1");
}

TEST_CASE("reading a vanished pid is an environment error with ENOENT") {
  auto r = readSmaps(kRoot, 999999);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ENOENT);
  CHECK(r.error().kind == ErrorKind::Environment);
}

TEST_CASE("parseMemsAllowed reads Mems_allowed_list from /proc/PID/status") {
  const std::string status =
      "Name:\tredis-server\nCpus_allowed_list:\t0-3\n"
      "Mems_allowed:\t00000000,00000013\nMems_allowed_list:\t0-1,4\nvoluntary_ctxt_switches:\t9\n";
  auto m = parseMemsAllowed(status, "/proc/42/status");
  REQUIRE(m.ok());
  CHECK(m.value() == std::set<int>{0, 1, 4});
  auto missing = parseMemsAllowed("Name:\tx\nMems_allowed:\t1\n", "/proc/42/status");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("Mems_allowed_list") != std::string::npos);
  CHECK_FALSE(parseMemsAllowed("Mems_allowed_list:\t0-x\n", "/proc/42/status").ok());
  CHECK_FALSE(parseMemsAllowed("Mems_allowed_list:\t3-1\n", "/proc/42/status").ok());
  auto gone = readMemsAllowed(SysRoot("/nonexistent-root"), 42);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ENOENT);
}

TEST_CASE("parseAllowedLists reads Cpus_allowed_list and Mems_allowed_list from one status") {
  const std::string status =
      "Name:\tredis-server\nCpus_allowed:\tffffffff\nCpus_allowed_list:\t0-31,64-95\n"
      "Mems_allowed:\t00000000,00000005\nMems_allowed_list:\t0,2\n";
  auto a = parseAllowedLists(status, "/proc/42/status");
  REQUIRE_MESSAGE(a.ok(), a.error().describe());
  CHECK(a->cpus.size() == 64);
  CHECK(a->cpus.count(64) == 1);
  CHECK(a->cpus.count(32) == 0);
  CHECK(a->mems == std::set<int>{0, 2});
  CHECK(parseCpusAllowed(status, "s").value().size() == 64);
  auto noCpus = parseAllowedLists("Mems_allowed_list:\t0\n", "/proc/42/status");
  REQUIRE_FALSE(noCpus.ok());
  CHECK(noCpus.error().message.find("Cpus_allowed_list") != std::string::npos);
  CHECK_FALSE(parseAllowedLists("Cpus_allowed_list:\t0-\nMems_allowed_list:\t0\n", "s").ok());
  auto gone = readAllowedLists(SysRoot("/nonexistent-root"), 42);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == ENOENT);
}

// tierd-pagestat: move_pages(2) with nodes=NULL against a layout whose answers are known, so a
// kernel that answers the query differently (kernel-patches/7.3 patch 2 batches it per folio) is
// caught. Run in the rig on every kernel (scenario pages-stat).
//
// One arena of 2 MiB slots, each slot a case (the expected status of each of its 4 KiB pages):
//   thp-n0-n1     one 4 MiB THP mapping, first 2 MiB on node 0, second moved to node 1 (one VMA,
//                 two PMDs on two nodes: an answer must not leak across PMDs)
//   4k-alternating base pages (MADV_NOHUGEPAGE), every other one moved to node 1 -> 0, 1, 0, ...
//                 (one page table, answers alternating)
//   hole          nothing mapped                                   -> -EFAULT
//   untouched     mapped, never touched                            -> -ENOENT
//   zero-4k       MADV_NOHUGEPAGE, only read                       -> -EFAULT (zero page)
//   zero-huge     MADV_HUGEPAGE, only read (huge zero page where enabled) -> -EFAULT
//   split-half    THP written, second half MADV_DONTNEED (PMD split) -> node 0, then -ENOENT
//   vma-edge      a 1 MiB + 4 KiB VMA at a PMD boundary, written; the rest of the slot unmapped
//                 -> node 0 up to the VMA's end, -EFAULT after it
//   mprotect-half THP written, second half mprotect(PROT_READ) (VMA and PMD split) -> node 0
//   hugetlb-2m    (with --hugetlb) a 2 MiB hugetlb page on node 1     -> node 1
// thp-n0-n1 must come out as two PMD-mapped THPs (AnonHugePages of the process), or the layout
// counts as not built.
// Every 4 KiB address of the arena is queried three ways: one call with all addresses in order,
// one call per address, and one call with the addresses shuffled (fixed seed) and repeated;
// each answer must equal the expected one. Output: one line per case with its counts, then
// "pagestat: PASS" (exit 0) or every mismatch and "pagestat: FAIL" (exit 1); exit 2 when the
// layout itself cannot be built (fewer than 2 nodes, mmap or mbind refused).
#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kHuge = 2UL << 20;

struct Case {
  std::string name;
  uintptr_t start = 0;
  std::vector<int> expected;  // one per 4 KiB page of the slot
};

[[noreturn]] void layoutFailed(const std::string& what) {
  if (errno != 0)
    std::fprintf(stderr, "pagestat: cannot build the layout: %s: %s\n", what.c_str(),
                 std::strerror(errno));
  else
    std::fprintf(stderr, "pagestat: cannot build the layout: %s\n", what.c_str());
  std::exit(2);
}

void bindTo(void* p, size_t len, int node) {
  unsigned long mask = 1UL << node;
  if (mbind(p, len, MPOL_BIND, &mask, sizeof(mask) * 8, 0) != 0) layoutFailed("mbind");
}

void mapFixed(uintptr_t at, size_t len, int flags = 0) {
  void* p = mmap(reinterpret_cast<void*>(at), len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | flags, -1, 0);
  if (p == MAP_FAILED) layoutFailed("mmap");
}

void advise(uintptr_t at, size_t len, int advice) {
  if (madvise(reinterpret_cast<void*>(at), len, advice) != 0) layoutFailed("madvise");
}

void writeTouch(uintptr_t at, size_t len) {
  for (uintptr_t a = at; a < at + len; a += kPage)
    *reinterpret_cast<volatile char*>(a) = 1;
}

int readTouch(uintptr_t at, size_t len) {
  int sum = 0;
  for (uintptr_t a = at; a < at + len; a += kPage)
    sum += *reinterpret_cast<volatile char*>(a);
  return sum;
}

// AnonHugePages of this process (kB, /proc/self/smaps_rollup): the PMD-mapped THPs.
long anonHugeKb() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

std::vector<int> uniform(size_t pages, int status) {
  return std::vector<int>(pages, status);
}

std::vector<int> query(const std::vector<void*>& addrs) {
  std::vector<int> status(addrs.size(), 12345);
  auto copy = addrs;
  if (move_pages(0, copy.size(), copy.data(), nullptr, status.data(), 0) != 0) {
    std::fprintf(stderr, "pagestat: move_pages(nodes=NULL) of %zu addresses failed: %s\n",
                 addrs.size(), std::strerror(errno));
    std::exit(1);
  }
  return status;
}

std::vector<Case> buildLayout(uintptr_t base, bool hugetlb) {
  const size_t slotPages = kHuge / kPage;
  std::vector<Case> cases;
  uintptr_t at = base;
  auto next = [&](const std::string& name, size_t slots) {
    cases.push_back({name, at, {}});
    at += slots * kHuge;
    return cases.back().start;
  };

  uintptr_t a = next("thp-n0-n1", 2);
  mapFixed(a, 2 * kHuge);
  advise(a, 2 * kHuge, MADV_HUGEPAGE);
  bindTo(reinterpret_cast<void*>(a), 2 * kHuge, 0);
  writeTouch(a, 2 * kHuge);
  {
    void* second = reinterpret_cast<void*>(a + kHuge);
    int target = 1, st = -1;
    if (move_pages(0, 1, &second, &target, &st, MPOL_MF_MOVE) != 0 || st != 1) {
      errno = st < 0 ? -st : errno;
      layoutFailed("move_pages of the second THP to node 1");
    }
  }
  cases.back().expected = uniform(slotPages, 0);
  auto n1 = uniform(slotPages, 1);
  cases.back().expected.insert(cases.back().expected.end(), n1.begin(), n1.end());

  a = next("4k-alternating", 1);
  mapFixed(a, kHuge);
  advise(a, kHuge, MADV_NOHUGEPAGE);
  bindTo(reinterpret_cast<void*>(a), kHuge, 0);
  writeTouch(a, kHuge);
  {
    std::vector<void*> odd;
    for (size_t i = 1; i < slotPages; i += 2)
      odd.push_back(reinterpret_cast<void*>(a + i * kPage));
    std::vector<int> target(odd.size(), 1), st(odd.size(), -1);
    if (move_pages(0, odd.size(), odd.data(), target.data(), st.data(), MPOL_MF_MOVE) != 0)
      layoutFailed("move_pages of every other 4 KiB page to node 1");
    for (int v : st)
      if (v != 1) {
        errno = v < 0 ? -v : 0;
        layoutFailed("a 4 KiB page did not move to node 1");
      }
  }
  for (size_t i = 0; i < slotPages; ++i)
    cases.back().expected.push_back(static_cast<int>(i % 2));

  next("hole", 1);
  cases.back().expected = uniform(slotPages, -EFAULT);

  a = next("untouched", 1);
  mapFixed(a, kHuge);
  cases.back().expected = uniform(slotPages, -ENOENT);

  a = next("zero-4k", 1);
  mapFixed(a, kHuge);
  advise(a, kHuge, MADV_NOHUGEPAGE);
  (void)readTouch(a, kHuge);
  cases.back().expected = uniform(slotPages, -EFAULT);

  a = next("zero-huge", 1);
  mapFixed(a, kHuge);
  advise(a, kHuge, MADV_HUGEPAGE);
  (void)readTouch(a, kHuge);
  cases.back().expected = uniform(slotPages, -EFAULT);

  a = next("split-half", 1);
  mapFixed(a, kHuge);
  advise(a, kHuge, MADV_HUGEPAGE);
  bindTo(reinterpret_cast<void*>(a), kHuge, 0);
  writeTouch(a, kHuge);
  advise(a + kHuge / 2, kHuge / 2, MADV_DONTNEED);
  cases.back().expected = uniform(slotPages / 2, 0);
  cases.back().expected.resize(slotPages, -ENOENT);

  a = next("vma-edge", 1);
  mapFixed(a, kHuge / 2 + kPage);
  bindTo(reinterpret_cast<void*>(a), kHuge / 2 + kPage, 0);
  writeTouch(a, kHuge / 2 + kPage);
  cases.back().expected = uniform(slotPages / 2 + 1, 0);
  cases.back().expected.resize(slotPages, -EFAULT);

  a = next("mprotect-half", 1);
  mapFixed(a, kHuge);
  advise(a, kHuge, MADV_HUGEPAGE);
  bindTo(reinterpret_cast<void*>(a), kHuge, 0);
  writeTouch(a, kHuge);
  if (mprotect(reinterpret_cast<void*>(a + kHuge / 2), kHuge / 2, PROT_READ) != 0)
    layoutFailed("mprotect");
  cases.back().expected = uniform(slotPages, 0);

  if (hugetlb) {
    a = next("hugetlb-2m", 1);
    mapFixed(a, kHuge, MAP_HUGETLB);
    bindTo(reinterpret_cast<void*>(a), kHuge, 1);
    writeTouch(a, kHuge);
    cases.back().expected = uniform(slotPages, 1);
  }
  // A trailing unmapped slot: the query's last addresses lie beyond every VMA.
  next("tail-hole", 1);
  cases.back().expected = uniform(slotPages, -EFAULT);
  return cases;
}

// Compares one way of asking with the expected answers; prints the first mismatches.
int compare(const char* how, const std::vector<void*>& addrs, const std::vector<int>& got,
            const std::vector<int>& want, const std::vector<std::string>& caseOf) {
  int bad = 0;
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (++bad <= 10)
      std::printf("pagestat: MISMATCH %s: %s %p: got %d, expected %d\n", how, caseOf[i].c_str(),
                  addrs[i], got[i], want[i]);
  }
  if (bad > 10) std::printf("pagestat: ... %d mismatches in all (%s)\n", bad, how);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  bool hugetlb = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--hugetlb") == 0) {
      hugetlb = true;
    } else {
      std::fprintf(stderr, "usage: tierd-pagestat [--hugetlb]\n");
      return 2;
    }
  }
  if (numa_available() < 0 || numa_max_node() < 1) {
    std::fprintf(stderr, "pagestat: needs 2 NUMA nodes\n");
    return 2;
  }
  // Reserve an arena of 16 slots aligned to 2 MiB; cases map into it with MAP_FIXED.
  const size_t arena = 16 * kHuge;
  void* r = mmap(nullptr, arena + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) layoutFailed("mmap of the arena");
  const uintptr_t base = (reinterpret_cast<uintptr_t>(r) + kHuge - 1) & ~(kHuge - 1);
  if (munmap(r, arena + kHuge) != 0) layoutFailed("munmap of the reservation");
  std::vector<Case> cases = buildLayout(base, hugetlb);
  // thp-n0-n1 must be two PMD-mapped THPs, or the layout does not test one walk per PMD.
  const long thpKb = anonHugeKb();
  std::printf("pagestat: PMD-mapped THP in the layout: %ld kB\n", thpKb);
  if (thpKb < static_cast<long>(2 * kHuge / 1024)) {
    errno = 0;
    layoutFailed("fewer than two PMD-mapped THPs (AnonHugePages " + std::to_string(thpKb) +
                 " kB; is THP enabled?)");
  }

  std::vector<void*> addrs;
  std::vector<int> want;
  std::vector<std::string> caseOf;
  for (const Case& c : cases) {
    for (size_t i = 0; i < c.expected.size(); ++i) {
      addrs.push_back(reinterpret_cast<void*>(c.start + i * kPage));
      want.push_back(c.expected[i]);
      caseOf.push_back(c.name);
    }
  }

  int bad = compare("in-order", addrs, query(addrs), want, caseOf);

  std::vector<int> single(addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i)
    single[i] = query({addrs[i]})[0];
  bad += compare("one-by-one", addrs, single, want, caseOf);

  // Shuffled, with every address asked twice.
  std::vector<size_t> order(addrs.size() * 2);
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i % addrs.size();
  std::mt19937_64 rng(14);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<void*> sAddrs;
  std::vector<int> sWant;
  std::vector<std::string> sCase;
  for (size_t i : order) {
    sAddrs.push_back(addrs[i]);
    sWant.push_back(want[i]);
    sCase.push_back(caseOf[i]);
  }
  bad += compare("shuffled", sAddrs, query(sAddrs), sWant, sCase);

  for (const Case& c : cases) {
    int nodes[2] = {0, 0}, enoent = 0, efault = 0;
    for (int s : c.expected) {
      if (s == 0 || s == 1)
        ++nodes[s];
      else if (s == -ENOENT)
        ++enoent;
      else if (s == -EFAULT)
        ++efault;
    }
    std::printf("pagestat: %-14s node0 %4d node1 %4d -ENOENT %4d -EFAULT %4d\n", c.name.c_str(),
                nodes[0], nodes[1], enoent, efault);
  }
  std::printf("pagestat: %zu addresses, asked 3 ways: %s\n", addrs.size(), bad ? "FAIL" : "PASS");
  return bad ? 1 : 0;
}

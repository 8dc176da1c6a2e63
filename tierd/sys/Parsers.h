#pragma once
/// \file
/// Strict parsers for the kernel's text formats. Each takes the text and a `context` (the path it
/// came from, used in errors) and either returns the parsed value or an Input error naming the
/// context and the offending text. None returns 0 for garbage: empty, signs where none belong,
/// trailing junk and overflow are all errors.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tierd/core/Numbers.h"
#include "tierd/core/Result.h"

namespace tierd::sys {

/// The strict decimal parsers of tierd/core/Numbers.h (whole text, base 10, Input error with
/// `context` on garbage or overflow), here so the kernel-format parsers and their callers say
/// sys::parseU64 as before.
using tierd::parseI64;
using tierd::parseU64;

/// Hex digits only (no prefix, no blanks), 1 to 16 of them, as the kernel prints addresses in
/// /proc/PID/maps (lower case); `upperOk` also accepts A-F. nullopt for anything else. Callers
/// that allow a "0x" prefix strip it first; they build their own error with line context.
std::optional<uint64_t> parseHexDigits(std::string_view digits, bool upperOk = false);

/// Parses the kernel's list format used by cpulist, nodelist, possible, online, has_cpu:
/// "0-3,8,10-11" (a trailing newline allowed; empty text = empty set). Ranges must be ascending.
/// Source: Documentation/admin-guide/cputopology.rst ("cpulist format").
Result<std::set<int>> parseIdList(std::string_view text, const std::string& context);

/// Formats a set back into the kernel's list format ("0-3,8").
std::string formatIdList(const std::set<int>& ids);

/// Parses meminfo: /proc/meminfo ("MemTotal:  16 kB") and per-node
/// /sys/devices/system/node/nodeN/meminfo ("Node 0 MemTotal:  16 kB"). Values with "kB" are
/// returned in BYTES; unitless values (HugePages_Total) as they are. Keys without the "Node N"
/// prefix and without the colon. Errors on a line that does not match.
Result<std::map<std::string, uint64_t>> parseMeminfo(std::string_view text,
                                                     const std::string& context);

/// Parses "key value" lines (/proc/vmstat, memory.stat, memory.numa_stat's first field aside):
/// each non-empty line is exactly a key and a signed 64-bit integer separated by blanks.
Result<std::map<std::string, int64_t>> parseKeyValue(std::string_view text,
                                                     const std::string& context);

/// Parses a bracketed choice such as /sys/kernel/mm/transparent_hugepage/enabled
/// "always [madvise] never" and returns the active word ("madvise"). Exactly one bracketed word.
Result<std::string> parseBracketChoice(std::string_view text, const std::string& context);

/// Parses a whitespace-separated row of non-negative integers (nodeN/distance: "10 20 40").
Result<std::vector<uint64_t>> parseU64Row(std::string_view text, const std::string& context);

/// Parses a size with a kernel unit suffix as used in hugepage directory names
/// ("hugepages-2048kB" -> 2097152). Input is the part after "hugepages-".
Result<uint64_t> parseKbSize(std::string_view text, const std::string& context);

/// The first line of `text` (without its '\n'), removed from `text`; the rest when there is no
/// newline. For line-by-line parsers: `while (!text.empty()) { auto line = takeLine(text); ... }`.
std::string_view takeLine(std::string_view& text);

/// Parses the `starttime` field (field 22, clock ticks since boot) out of one /proc/PID/stat
/// line (proc(5)). The comm field (2) may hold spaces and parentheses: fields are counted after
/// the last ')'. Errors: Input naming `context` when the line is truncated or the field is not a
/// number.
Result<uint64_t> parseStatStartTime(std::string_view stat, const std::string& context);

/// Field `field` (1-based as in proc(5), at least 3) of one /proc/PID/stat line as a number,
/// counted after the last ')' like parseStatStartTime. Errors: Input naming `context`.
Result<uint64_t> parseStatField(std::string_view stat, int field, const std::string& context);

/// utime + stime (fields 14 and 15, clock ticks: sysconf(_SC_CLK_TCK) per second) of one
/// /proc/PID/stat line: the CPU time the task (a thread such as a kdamond, or a process's main
/// thread) has used. Errors: Input naming `context`.
Result<uint64_t> parseStatCpuTicks(std::string_view stat, const std::string& context);

/// One line of /proc/buddyinfo: "Node 0, zone   Normal   9482  12821 ... 23": the number of free
/// blocks of each order (a block of order k is 2^k base pages) in one zone of one node
/// (mm/vmstat.c frag_show_print; orders 0 .. NR_PAGE_ORDERS-1, 11 with 4 KiB pages).
struct BuddyZone {
  int node = -1;
  std::string zone;                  ///< "DMA", "DMA32", "Normal", "Movable", ...
  std::vector<uint64_t> freeBlocks;  ///< index = order
};

/// Parses /proc/buddyinfo text. Strict: every line is "Node N, zone NAME" and at least one count,
/// and every line has the same number of orders. Errors: Input with "context:line".
Result<std::vector<BuddyZone>> parseBuddyinfo(std::string_view text, const std::string& context);

/// Bytes in free blocks of order `minOrder` or higher on `node`, all zones summed, with
/// `basePageSize`-byte pages (order 9 = 2 MiB blocks with 4 KiB pages). 0 for an unknown node.
uint64_t freeBytesAtOrder(const std::vector<BuddyZone>& zones, int node, unsigned minOrder,
                          uint64_t basePageSize);

}  // namespace tierd::sys

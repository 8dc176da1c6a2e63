#pragma once
/// \file
/// Strict parsers of command-line option values, one grammar per kind of value, shared by
/// every command of tierctl and tierd (the typed getters of ParsedArgs call them). Sizes and
/// durations use the config's grammar (policy/ConfigUnits.h: "1GiB", "64MiB", "4096B"; "500ms",
/// "30s"), so a value means the same on the command line and in tierd.toml. Every error is
/// ErrorKind::Input with `context` (the option, "--size") and says what was expected.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "tierd/core/Result.h"

namespace tierd::cli {

/// The largest process id an option accepts: 2^30, above the kernel's PID_MAX_LIMIT (2^22), so
/// a number no process can have is answered by the kernel ("no such process", exit 1), and
/// only what is not a pid at all (0, a sign, letters, more than 30 bits) is a usage error.
inline constexpr uint64_t kMaxPidOption = 1u << 30;

/// The largest NUMA node id an option accepts (2^20, far above the kernel's MAX_NUMNODES).
inline constexpr uint64_t kMaxNodeOption = 1u << 20;

/// Parses a decimal integer in lo..hi (no sign, no blanks, no unit): "42". Errors: not a
/// number ("expected an integer in LO..HI, got 'x'"), out of range.
Result<uint64_t> parseBoundedInteger(std::string_view text, uint64_t lo, uint64_t hi,
                                     const std::string& context);

/// Parses a process id: a decimal integer in 1..kMaxPidOption. Errors as parseBoundedInteger
/// ("expected a process id ...").
Result<pid_t> parsePid(std::string_view text, const std::string& context);

/// Parses a byte size in the config's grammar (policy::parseByteSize: digits and one of B, KiB,
/// MiB, GiB, TiB, or K, M, G, T for the same) in lo..hi bytes: "4G" is "4GiB". "4096", "4GB"
/// and "4g" are errors with the config's hint.
Result<uint64_t> parseSizeOption(std::string_view text, uint64_t lo, uint64_t hi,
                                 const std::string& context);

/// Parses a duration in the config's grammar (policy::parseDuration: digits and one of ns, us,
/// ms, s, m, h) into nanoseconds, at most maxNs.
Result<uint64_t> parseDurationOption(std::string_view text, uint64_t maxNs,
                                     const std::string& context);

/// Parses "A-B" with A and B hexadecimal addresses (with or without 0x), A < B, as in
/// /proc/PID/maps. Returns {A, B}. Errors: Input naming `context`.
Result<std::pair<uint64_t, uint64_t>> parseAddressRange(const std::string& text,
                                                        const std::string& context);

}  // namespace tierd::cli

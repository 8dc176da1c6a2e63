#pragma once
/// \file
/// The line walk shared by the kernel-format parsers of tierd/sys (Parsers.cpp: meminfo, key-value
/// files; ProcMaps.cpp: maps, smaps, numa_maps), so every one of them numbers lines and skips
/// blank ones the same way and names errors "context:line".

#include <string>
#include <string_view>

#include "tierd/core/Result.h"

namespace tierd::sys {

/// `s` without trailing blanks, tabs and carriage returns.
inline std::string_view trimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// Calls `fn(line, where)` for every line of `text` that is not blank, in order: `line` without
/// its trailing blanks, `where` "context:N" with N counting every line from 1 (blank ones too).
/// Stops at the first error `fn` returns and returns it; Ok otherwise. `fn` returns Status.
template <typename F>
Status forEachLine(std::string_view text, const std::string& context, F&& fn) {
  size_t lineNo = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = trimRight(text.substr(pos, nl - pos));
    ++lineNo;
    pos = nl + 1;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    Status s = fn(line, context + ":" + std::to_string(lineNo));
    if (!s) return s;
  }
  return Ok{};
}

}  // namespace tierd::sys

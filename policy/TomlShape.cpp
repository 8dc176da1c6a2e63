#include "policy/TomlShape.h"

#include "policy/ConfigSchema.h"

namespace tierd::policy {

namespace {

// A character of a bare key; bytes of non-ASCII characters count too (a parser that took Unicode
// keys could nest them as deep: over-counting only refuses text that is invalid anyway).
bool bareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || static_cast<unsigned char>(c) >= 0x80;
}

// Walks the text one byte at a time, keeping the line and column of the next byte.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  std::optional<ShapeProblem> run() {
    int depth = 0;       // arrays and inline tables (and header brackets) open
    int dots = 0;        // dots of the current run of key parts
    bool inRun = false;  // within a run of bare/quoted parts and dots
    int runLine = 0, runColumn = 0;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == ' ' || c == '\t') {  // whitespace around a dot is allowed: the run goes on
        advance();
        continue;
      }
      const bool quote = c == '"' || c == '\'';
      if (quote || c == '.' || bareKeyChar(c)) {
        if (!inRun) inRun = true, dots = 0, runLine = line_, runColumn = column_;
        if (c == '.' && ++dots >= kMaxKeyParts)
          return ShapeProblem{runLine, runColumn,
                              "a dotted key or table header of more than " +
                                  std::to_string(kMaxKeyParts) +
                                  " parts (tierd's limit, checked before parsing)"};
        if (quote)
          skipString();
        else
          advance();
        continue;
      }
      inRun = false;  // a newline, '=', ',', a bracket or anything else ends the key
      if (c == '#') {
        skipComment();
        continue;
      }
      if (c == '[' || c == '{') {
        if (++depth > kMaxNesting)
          return ShapeProblem{line_, column_,
                              "more than " + std::to_string(kMaxNesting) +
                                  " arrays or tables nested (tierd's limit, checked before "
                                  "parsing)"};
      } else if ((c == ']' || c == '}') && depth > 0) {
        --depth;
      }
      advance();
    }
    return std::nullopt;
  }

 private:
  std::string_view t_;
  size_t i_ = 0;
  int line_ = 1;
  int column_ = 1;

  // Steps over one byte; a UTF-8 continuation byte is no character of its own.
  void advance() {
    const auto c = static_cast<unsigned char>(t_[i_++]);
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column_;
    }
  }

  bool at(std::string_view s) const { return t_.substr(i_, s.size()) == s; }

  // Up to the newline (left for the caller).
  void skipComment() {
    while (i_ < t_.size() && t_[i_] != '\n')
      advance();
  }

  // A basic ("...", with escapes) or literal ('...') string, single-line or multi-line
  // (""" / '''; up to two quotes of the content may stand right before the closing three). An
  // unterminated single-line string ends at the newline, where toml++ stops with an error.
  void skipString() {
    const char q = t_[i_];
    const bool basic = q == '"';
    const std::string_view three = basic ? "\"\"\"" : "'''";
    if (at(three)) {
      for (int k = 0; k < 3; ++k)
        advance();
      while (i_ < t_.size()) {
        if (basic && t_[i_] == '\\') {
          advance();
          if (i_ < t_.size()) advance();
        } else if (at(three)) {
          for (int k = 0; k < 3; ++k)
            advance();
          for (int k = 0; k < 2 && i_ < t_.size() && t_[i_] == q; ++k)
            advance();
          return;
        } else {
          advance();
        }
      }
      return;
    }
    advance();
    while (i_ < t_.size() && t_[i_] != '\n') {
      const char c = t_[i_];
      advance();
      if (c == q) return;
      if (basic && c == '\\' && i_ < t_.size() && t_[i_] != '\n') advance();
    }
  }
};

}  // namespace

std::optional<ShapeProblem> checkTomlShape(std::string_view text) {
  return Scanner(text).run();
}

}  // namespace tierd::policy

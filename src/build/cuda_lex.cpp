#include "build/cuda_lex.h"

#include <cctype>

namespace cudal1 {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

struct Lexer {
  std::string_view s;
  std::size_t i = 0;
  int line = 1;
  Lexed out;
  bool line_start = true;  // only whitespace since the last newline

  void fail(const std::string& what) {
    if (out.problem.empty()) out.problem = "line " + std::to_string(line) + ": " + what;
  }
  void advance_to(std::size_t j) {
    for (; i < j && i < s.size(); ++i)
      if (s[i] == '\n') ++line;
  }
  void push(TokKind k, std::size_t b, int l) {
    out.tokens.push_back({k, b, i, l, s.substr(b, i - b)});
    line_start = false;
  }
  // Past a quoted literal starting at i (the opening quote); false if it never closes.
  bool skip_quoted(char q) {
    for (std::size_t j = i + 1; j < s.size(); ++j) {
      if (s[j] == '\\') { ++j; continue; }
      if (s[j] == '\n') return false;
      if (s[j] == q) { advance_to(j + 1); return true; }
    }
    return false;
  }
  bool skip_raw_string() {  // i at the opening quote of R"delim( ... )delim"
    auto paren = s.find('(', i);
    if (paren == std::string_view::npos || paren - i > 17) return false;
    std::string close = ")" + std::string(s.substr(i + 1, paren - i - 1)) + "\"";
    auto end = s.find(close, paren);
    if (end == std::string_view::npos) return false;
    advance_to(end + close.size());
    return true;
  }
  void directive() {
    std::size_t b = i;
    int l = line;
    while (i < s.size() && s[i] != '\n') {
      if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') advance_to(i + 2);
      else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
        auto end = s.find("*/", i + 2);
        if (end == std::string_view::npos) { fail("unterminated comment"); advance_to(s.size()); }
        else advance_to(end + 2);
      } else ++i;
    }
    push(TokKind::directive, b, l);
    line_start = true;
  }

  void run() {
    while (i < s.size()) {
      char c = s[i];
      if (c == '\n') { ++line; ++i; line_start = true; continue; }
      if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
      if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') { advance_to(i + 2); continue; }
      if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
        while (i < s.size() && s[i] != '\n') {
          if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') advance_to(i + 2);
          else ++i;
        }
        continue;
      }
      if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
        auto end = s.find("*/", i + 2);
        if (end == std::string_view::npos) { fail("unterminated comment"); return; }
        advance_to(end + 2);
        continue;
      }
      if (c == '#' && line_start) { directive(); continue; }
      std::size_t b = i;
      int l = line;
      if (ident_start(c)) {
        while (i < s.size() && ident_char(s[i])) ++i;
        std::string_view word = s.substr(b, i - b);
        bool prefix = word == "L" || word == "u" || word == "U" || word == "u8";
        bool raw = word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
        if (i < s.size() && s[i] == '"' && raw) {
          if (!skip_raw_string()) { fail("unterminated raw string"); return; }
          push(TokKind::literal, b, l);
        } else if (i < s.size() && (s[i] == '"' || s[i] == '\'') && prefix) {
          if (!skip_quoted(s[i])) { fail("unterminated literal"); return; }
          push(TokKind::literal, b, l);
        } else {
          push(TokKind::ident, b, l);
        }
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
        // A pp-number: digits, letters, dots, digit separators and signed exponents.
        for (++i; i < s.size(); ++i) {
          char d = s[i];
          if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) continue;
          if (d == '\'' && i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i + 1]))) continue;
          if (!ident_char(d) && d != '.') break;
        }
        push(TokKind::number, b, l);
        continue;
      }
      if (c == '"' || c == '\'') {
        if (!skip_quoted(c)) { fail("unterminated literal"); return; }
        push(TokKind::literal, b, l);
        continue;
      }
      std::string_view rest = s.substr(i);
      std::size_t n = rest.starts_with("<<<") || rest.starts_with(">>>") ? 3 : rest.starts_with("::") ? 2 : 1;
      i += n;
      push(TokKind::punct, b, l);
    }
  }
};

}  // namespace

Lexed lex_cuda(std::string_view source) {
  Lexer lx;
  lx.s = source;
  lx.run();
  return std::move(lx.out);
}

}  // namespace cudal1

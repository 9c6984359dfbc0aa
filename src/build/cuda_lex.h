// build/cuda_lex.h — tokens of C++/CUDA source text, enough to find its top-level structure.
//
// Comments vanish; string, character and raw-string literals are single tokens (so a brace or
// "<<<" inside one is never seen); a preprocessor directive is one token spanning its logical
// line. "<<<", ">>>" and "::" are single punctuators, every other punctuator is one character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cudal1 {

enum class TokKind { ident, number, literal, punct, directive };

struct Token {
  TokKind kind;
  std::size_t begin, end;  // byte offsets in the source
  int line;                // 1-based line of `begin`
  std::string_view text;
  bool is(std::string_view s) const { return text == s; }
};

struct Lexed {
  std::vector<Token> tokens;
  std::string problem;  // not empty: the text could not be read with confidence (where, what)
};

Lexed lex_cuda(std::string_view source);

}  // namespace cudal1

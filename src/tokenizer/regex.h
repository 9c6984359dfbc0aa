// tokenizer/regex.h — a compiled Unicode regular expression (PCRE2 in UTF + UCP mode, JIT-compiled
// when the platform allows) and the one operation pre-tokenization needs: every match, in order.
//
// HF's tokenizers run these patterns on Oniguruma. PCRE2 is another backtracking Perl-style
// engine with the same semantics for everything the GPT-2 / Qwen2 / Llama-3 patterns use (\p{L},
// \p{N}, (?i:...), possessive-free alternation, (?!\S) lookahead), and Debian ships it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cudal1::tokenizer {

class Regex {
 public:
  // Throws cudal1::Error (input) naming `what` when the pattern does not compile.
  explicit Regex(const std::string& pattern, const std::string& what = "regex");

  // [begin, end) byte offsets of the successive non-overlapping matches in `text`, which must be
  // valid UTF-8 (the caller checks once; PCRE2's own check is switched off). An empty match
  // moves the search on by one character, so no input loops forever.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  // Whether the pattern matches at exactly `pos` (anchored there).
  bool matches_at(std::string_view text, std::size_t pos) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<Code> code_;
};

// `pattern` with \s (and \S outside character classes) spelt as the Unicode White_Space set,
// Oniguruma's meaning, instead of PCRE2's (which adds U+180E). Applied by Regex itself.
std::string oniguruma_compatible(const std::string& pattern);

// Unicode \w as Rust's regex crate defines it (Alphabetic, marks, decimal digits, connector
// punctuation, joiners): what HF's added tokens check for `single_word`.
bool is_word_char(char32_t cp);

}  // namespace cudal1::tokenizer

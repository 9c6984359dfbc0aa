// tokenizer/added_tokens.h — the `added_tokens` of a tokenizer.json (special tokens such as
// <|im_end|> and plain added ones such as <tool_call>) and how HF finds them in text.
//
// They are matched before any pre-tokenization, so "<|im_end|>" is one id wherever it appears,
// never a run of "<", "|", "im" ... HF's rules, reproduced here:
//   - leftmost match first, and the longest one at that position;
//   - `normalized: false` tokens are matched in the raw text, `normalized: true` ones in the
//     normalised remainder afterwards;
//   - `single_word`: only where no word character touches either side;
//   - `lstrip` / `rstrip`: the match swallows the whitespace on that side.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cudal1::tokenizer {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// Part of the input: a stretch of plain text [begin, end), or an added token (id >= 0) there.
struct Segment {
  std::size_t begin, end;
  int32_t id;  // -1: plain text
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` of one kind (all normalized or all not); `normalizer` spells the normalized ones the
  // way they will be looked for.
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, const Normalizer* normalizer);

  // Cuts `text` (valid UTF-8) into plain text and added tokens, in order, covering it all.
  std::vector<Segment> split(std::string_view text) const;

  bool empty() const { return tokens_.empty(); }

 private:
  struct Pattern {
    std::string text;
    std::size_t token;  // index into tokens_
  };
  // Per first byte, the patterns starting with it, longest first: the first that matches at a
  // position is the leftmost-longest match HF's Aho-Corasick automaton reports.
  std::vector<std::vector<Pattern>> by_first_byte_;
  std::vector<AddedToken> tokens_;
};

// Reads tokenizer.json's "added_tokens" list; throws cudal1::Error (input) on a malformed entry.
std::vector<AddedToken> added_tokens_from_json(const nlohmann::json& list, const std::string& context);

}  // namespace cudal1::tokenizer

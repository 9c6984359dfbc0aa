// tokenizer/pre_tokenizer.h — the `pre_tokenizer` of a byte-level BPE tokenizer.json: how
// normalised text is cut into the pieces BPE then encodes one at a time.
//
// Supported, because it is what Qwen2 / Qwen2.5 / Llama-3 (and GPT-2) ship:
//   - Split {pattern: {Regex|String}, behavior: Isolated|Removed, invert}
//   - ByteLevel {add_prefix_space, use_regex}: use_regex applies GPT-2's own pattern first
//   - Sequence of those, with exactly one ByteLevel, last.
// Pieces come out as raw bytes; the byte-level alphabet is applied inside BPE (bytes are what it
// merges), so ByteLevel here only contributes its prefix space and its regex.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/regex.h"

namespace cudal1::tokenizer {

// GPT-2's pattern, which ByteLevel uses when use_regex is true.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class PreTokenizer {
 public:
  // Throws cudal1::Error (input) naming the field for anything outside the list above.
  static PreTokenizer from_json(const nlohmann::json& j, const std::string& context);

  // Appends the pieces of `text` (valid UTF-8) to `out`, in order; empty pieces are dropped.
  void split(std::string_view text, std::vector<std::string>& out) const;

 private:
  struct Step {
    enum class Kind { split, byte_level } kind;
    std::shared_ptr<const Regex> regex;  // split, or byte_level with use_regex
    bool removed = false;                // Split behavior Removed: matches are dropped
    bool invert = false;                 // Split invert: the gaps are the delimiters
    bool add_prefix_space = false;       // byte_level
  };
  std::vector<Step> steps_;
};

}  // namespace cudal1::tokenizer

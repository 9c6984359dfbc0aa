#include "tokenizer/added_tokens.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {

std::vector<AddedToken> added_tokens_from_json(const nlohmann::json& list, const std::string& context) {
  std::vector<AddedToken> out;
  if (list.is_null()) return out;
  if (!list.is_array()) throw Error(ErrorKind::input, "added_tokens is not a list", {}, context);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& t = list[i];
    std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() || !t.contains("id") ||
        !t["id"].is_number_integer() || t["id"].get<int64_t>() < 0) {
      throw Error(ErrorKind::input, where + " needs a string \"content\" and a non-negative integer \"id\"", {}, context);
    }
    AddedToken a;
    a.content = t["content"].get<std::string>();
    if (a.content.empty() || !is_valid_utf8(a.content))
      throw Error(ErrorKind::input, where + ".content is empty or not UTF-8", {}, context);
    a.id = static_cast<int32_t>(t["id"].get<int64_t>());
    auto flag = [&](const char* key, bool fallback) { return t.contains(key) && t[key].is_boolean() ? t[key].get<bool>() : fallback; };
    a.special = flag("special", false);
    a.lstrip = flag("lstrip", false);
    a.rstrip = flag("rstrip", false);
    a.single_word = flag("single_word", false);
    a.normalized = flag("normalized", !a.special);  // HF's default
    out.push_back(std::move(a));
  }
  return out;
}

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, const Normalizer* normalizer)
    : by_first_byte_(256), tokens_(tokens) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    std::string text = t.normalized && normalizer ? normalizer->apply(t.content) : t.content;
    if (text.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(text[0])].push_back({std::move(text), i});
  }
  for (auto& bucket : by_first_byte_) {
    // Longest first; among equal texts the first listed, as HF builds its automaton in order.
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Pattern& a, const Pattern& b) { return a.text.size() > b.text.size(); });
  }
}

std::vector<Segment> AddedTokenMatcher::split(std::string_view s) const {
  std::vector<Segment> out;
  if (s.empty()) return out;
  if (tokens_.empty()) return {{0, s.size(), -1}};
  auto char_before = [&](std::size_t pos) {
    char32_t cp;
    utf8_decode(s, pos - utf8_length_before(s, pos), cp);
    return cp;
  };
  auto char_at = [&](std::size_t pos) {
    char32_t cp;
    utf8_decode(s, pos, cp);
    return cp;
  };
  std::size_t start_offset = 0;  // end of the previous emitted token (HF's start_offset)
  std::size_t pos = 0;
  while (pos < s.size()) {
    const Pattern* hit = nullptr;
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(s[pos])];
    for (const Pattern& p : bucket) {
      if (s.compare(pos, p.text.size(), p.text) == 0) {
        hit = &p;
        break;
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    std::size_t start = pos, stop = pos + hit->text.size();
    // The automaton moves past every match it reports, used or not.
    pos = stop;
    const AddedToken& t = tokens_[hit->token];
    if (t.single_word) {
      bool start_space = start == 0 || !is_word_char(char_before(start));
      bool stop_space = stop == s.size() || !is_word_char(char_at(stop));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      std::size_t b = start;
      while (b > 0 && is_rust_whitespace(char_before(b))) b -= utf8_length_before(s, b);
      // Never reach back into the previous token (or the whitespace it swallowed).
      start = std::max(b, start_offset);
    }
    if (t.rstrip) {
      while (stop < s.size()) {
        char32_t cp;
        std::size_t n = utf8_decode(s, stop, cp);
        if (!is_rust_whitespace(cp)) break;
        stop += n;
      }
    }
    if (start > start_offset) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
    // HF's automaton resumes after the match itself, not after the whitespace rstrip swallowed;
    // only an added token that begins with whitespace could start in there, and HF would then
    // emit overlapping pieces. We resume after the whitespace instead.
    pos = std::max(pos, stop);
  }
  if (start_offset < s.size()) out.push_back({start_offset, s.size(), -1});
  return out;
}

}  // namespace cudal1::tokenizer

#include "tokenizer/pre_tokenizer.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace cudal1::tokenizer {
namespace {

const char* kSupported =
    "supported: Split (Regex or String pattern, behavior Isolated or Removed) and ByteLevel, alone or in a "
    "Sequence ending with one ByteLevel (what Qwen2 and Llama-3 ship)";

Error unsupported(const std::string& what, const std::string& context) {
  return Error(ErrorKind::input, "unsupported pre_tokenizer: " + what, kSupported, context);
}

// A literal string as a PCRE2 pattern: escape every ASCII character that is not alphanumeric.
std::string escape_literal(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out += '\\';
    out += c;
  }
  return out;
}

bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].get<bool>();
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& j, const std::string& context) {
  if (j.is_null()) {
    throw Error(ErrorKind::input, "pre_tokenizer is null: a byte-level BPE tokenizer needs a ByteLevel pre_tokenizer",
                kSupported, context);
  }
  std::vector<nlohmann::json> items;
  if (j.value("type", "") == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      throw unsupported("Sequence without a \"pretokenizers\" list", context);
    for (const auto& p : j["pretokenizers"]) items.push_back(p);
  } else {
    items.push_back(j);
  }
  PreTokenizer pt;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& p = items[i];
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) throw unsupported(p.dump(), context);
    std::string type = p["type"].get<std::string>();
    Step step{};
    if (type == "Split") {
      step.kind = Step::Kind::split;
      const auto& pattern = p.value("pattern", nlohmann::json());
      std::string regex;
      if (pattern.is_object() && pattern.contains("Regex")) {
        regex = pattern["Regex"].get<std::string>();
      } else if (pattern.is_object() && pattern.contains("String")) {
        regex = escape_literal(pattern["String"].get<std::string>());
      } else {
        throw unsupported("Split.pattern must be {\"Regex\": ...} or {\"String\": ...}", context);
      }
      std::string behavior = p.value("behavior", "");
      if (behavior == "Isolated") {
        step.removed = false;
      } else if (behavior == "Removed") {
        step.removed = true;
      } else {
        throw unsupported("Split.behavior \"" + behavior + "\" (supported: Isolated, Removed)", context);
      }
      step.invert = bool_field(p, "invert", false);
      try {
        step.regex = std::make_shared<Regex>(regex, "pre_tokenizer Split pattern");
      } catch (const Error& e) {
        throw Error(e.kind(), e.message() + ": " + regex, e.hint(), context);
      }
    } else if (type == "ByteLevel") {
      if (i + 1 != items.size()) throw unsupported("ByteLevel must be the last pre-tokenizer", context);
      step.kind = Step::Kind::byte_level;
      step.add_prefix_space = bool_field(p, "add_prefix_space", true);
      if (bool_field(p, "use_regex", true)) step.regex = std::make_shared<Regex>(kGpt2Pattern, "GPT-2 pattern");
    } else {
      throw unsupported("type \"" + type + "\"", context);
    }
    pt.steps_.push_back(std::move(step));
  }
  if (pt.steps_.empty() || pt.steps_.back().kind != Step::Kind::byte_level) {
    throw unsupported("no ByteLevel step: a byte-level BPE tokenizer needs one, last", context);
  }
  return pt;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& out) const {
  std::vector<std::string> pieces{std::string(text)}, next;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      // HF applies each step to each piece the previous steps left, so ByteLevel's prefix space
      // goes in front of every piece, not only the first.
      if (step.kind == Step::Kind::byte_level && step.add_prefix_space && (piece.empty() || piece[0] != ' '))
        piece.insert(piece.begin(), ' ');
      if (!step.regex) {
        next.push_back(std::move(piece));
        continue;
      }
      bool removed = step.kind == Step::Kind::split && step.removed;
      bool invert = step.kind == Step::Kind::split && step.invert;
      // Matches and the gaps between them, each a piece unless it is a removed delimiter.
      std::size_t prev = 0;
      auto emit = [&](std::size_t b, std::size_t e, bool is_match) {
        if (e <= b) return;
        bool delimiter = invert ? !is_match : is_match;
        if (removed && delimiter) return;
        next.emplace_back(piece, b, e - b);
      };
      for (auto [b, e] : step.regex->find_all(piece)) {
        emit(prev, b, false);
        emit(b, e, true);
        prev = e;
      }
      emit(prev, piece.size(), false);
    }
    pieces.swap(next);
  }
  for (auto& p : pieces) out.push_back(std::move(p));
}

}  // namespace cudal1::tokenizer

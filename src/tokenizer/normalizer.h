// tokenizer/normalizer.h — the `normalizer` of a tokenizer.json: nothing, or Unicode NFC.
//
// Qwen2 / Qwen2.5 ship {"type": "NFC"}; Llama-3 ships null. NFC comes from ICU (Debian's
// libicu-dev), never hand-written tables. A build without ICU (CUDAL1_TOKENIZER_HAVE_ICU unset)
// refuses NFC tokenizers when loading them rather than tokenizing differently from HF.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace cudal1::tokenizer {

class Normalizer {
 public:
  enum class Kind { none, nfc };

  Normalizer() = default;
  explicit Normalizer(Kind kind);

  // Reads tokenizer.json's "normalizer" (null, {"type": "NFC"}, or a Sequence of those). Throws
  // cudal1::Error (input) for anything else, naming the field; `context` is the file.
  static Normalizer from_json(const nlohmann::json& j, const std::string& context);

  // `text` must be valid UTF-8.
  std::string apply(std::string_view text) const;

  Kind kind() const { return kind_; }

  // Whether this build can do NFC at all.
  static bool nfc_available();

 private:
  Kind kind_ = Kind::none;
};

}  // namespace cudal1::tokenizer

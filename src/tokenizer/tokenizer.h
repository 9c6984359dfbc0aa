// tokenizer/tokenizer.h — a Hugging Face byte-level BPE tokenizer (what Qwen2, Qwen2.5 and
// Llama-3 ship), loaded from tokenizer.json (+ tokenizer_config.json) and producing exactly the
// ids and text HF's `tokenizers` library produces.
//
// encode(text): added tokens are cut out first (raw text, then the NFC-normalised remainder),
// the rest is pre-tokenized by the file's regex and encoded piece by piece with BPE; with
// add_special the post_processor's template adds its tokens (Llama-3's <|begin_of_text|>).
// decode(ids): tokens back to bytes through the byte-level alphabet, invalid UTF-8 as U+FFFD.
//
// A Tokenizer is immutable after loading and cheap to copy (shared state); encode and decode
// may be called from several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/chat_template.h"

namespace cudal1::tokenizer {

// Ids of the roles tokenizer_config.json names (bos_token, eos_token, pad_token, unk_token).
struct SpecialTokens {
  std::optional<int32_t> bos, eos, pad, unk;
  std::string bos_text, eos_text, pad_text, unk_text;  // empty when not set
};

class Tokenizer {
 public:
  // DIR/tokenizer.json, plus DIR/tokenizer_config.json and DIR/chat_template.jinja when present
  // (the layout of a Hugging Face model folder).
  static Tokenizer from_directory(const std::filesystem::path& dir);
  static Tokenizer from_files(const std::filesystem::path& tokenizer_json,
                              const std::optional<std::filesystem::path>& tokenizer_config = std::nullopt);
  // From the files' text. `config_json` may be empty. `context` names the source in errors.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                             const std::string& context = "tokenizer.json");

  // Throws cudal1::Error (input) when `text` is not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool add_special = false) const;
  // Unknown ids are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // added tokens first, as HF
  std::optional<std::string> id_to_token(int32_t id) const;

  // HF's get_vocab_size(with_added_tokens=True): distinct tokens, model and added.
  std::size_t vocab_size() const;
  // One past the largest id: the smallest embedding table that can hold every id.
  std::size_t id_bound() const;

  bool is_special(int32_t id) const;
  const SpecialTokens& special_tokens() const;
  const std::vector<AddedToken>& added_tokens() const;

  // tokenizer_config.json's chat_template (the "default" one of a named list), or the folder's
  // chat_template.jinja; nullopt when there is none.
  const std::optional<std::string>& chat_template_text() const;
  // The recognised layout, or `format` when given (--chat-format). Throws cudal1::Error (input)
  // when there is no template or it is not recognised, and no format was given.
  ChatTemplate chat_template(std::optional<ChatFormat> format = std::nullopt) const;
  std::string apply_chat_template(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                  std::optional<ChatFormat> format = std::nullopt) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cudal1::tokenizer

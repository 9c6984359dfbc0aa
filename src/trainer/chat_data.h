// trainer/chat_data.h — how every stage turns the loop's texts into token ids: the prompt as the
// model's chat template puts it before an answer, the answer as the template closes an assistant
// turn (ChatML's <|im_end|>, Llama-3's <|eot_id|>), and the tokens that end an answer when sampling.
// One place, so that what the model is trained on and what it is sampled with never drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace cudal1::trainer {

class ChatEncoder {
 public:
  // `format`: the layout when the tokenizer's own template is not recognised (--chat-format).
  ChatEncoder(tokenizer::Tokenizer tok, std::optional<tokenizer::ChatFormat> format);

  // The user turn then the assistant's opening: what a completion is sampled after.
  std::vector<int64_t> prompt(const std::string& user) const;
  // A conversation (user first, then assistant and user turns alternating) and the assistant's
  // opening: what a revision is sampled after. prompt(u) is conversation({{"user", u}}).
  std::vector<int64_t> conversation(const std::vector<tokenizer::ChatMessage>& messages) const;
  // The prompt and the answer's tokens with the turn's closing, for training on the answer.
  std::pair<std::vector<int64_t>, std::vector<int64_t>> prompt_and_answer(const std::string& user,
                                                                          const std::string& answer) const;
  // Sampling stops after one of these: the end of the assistant's turn and the end of text.
  std::vector<int64_t> stop_token_ids() const;
  // Sampled ids back to the answer's text (a stop token and special tokens left out).
  std::string decode_answer(const std::vector<int64_t>& ids) const;
  int64_t pad_token_id() const;

 private:
  tokenizer::Tokenizer tok_;  // shares its tables: a copy is cheap
  std::optional<tokenizer::ChatFormat> format_;
};

}  // namespace cudal1::trainer

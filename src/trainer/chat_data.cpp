// trainer/chat_data.cpp — chat-template encoding shared by the stages (see chat_data.h).
#include "trainer/chat_data.h"

#include <algorithm>

namespace cudal1::trainer {

namespace {

std::vector<int64_t> widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

ChatEncoder::ChatEncoder(tokenizer::Tokenizer tok, std::optional<tokenizer::ChatFormat> format)
    : tok_(std::move(tok)), format_(format) {
  tok_.chat_template(format_);  // an unrecognised template fails here, before any work, with its hint
}

std::vector<int64_t> ChatEncoder::prompt(const std::string& user) const { return conversation({{"user", user}}); }

std::vector<int64_t> ChatEncoder::conversation(const std::vector<tokenizer::ChatMessage>& messages) const {
  return widen(tok_.encode(tok_.apply_chat_template(messages, true, format_)));
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> ChatEncoder::prompt_and_answer(const std::string& user,
                                                                                      const std::string& answer) const {
  std::vector<tokenizer::ChatMessage> turn = {{"user", user}};
  std::string prompt = tok_.apply_chat_template(turn, true, format_);
  turn.push_back({"assistant", answer});
  std::string whole = tok_.apply_chat_template(turn, false, format_);
  // The template may reformat the answer (Llama-3 trims it); what follows the prompt is the turn.
  std::string rest = whole.compare(0, prompt.size(), prompt) == 0 ? whole.substr(prompt.size()) : answer;
  return {widen(tok_.encode(prompt)), widen(tok_.encode(rest))};
}

std::vector<int64_t> ChatEncoder::stop_token_ids() const {
  std::vector<int64_t> ids;
  const char* turn_end = tok_.chat_template(format_).format() == tokenizer::ChatFormat::chatml ? "<|im_end|>" : "<|eot_id|>";
  if (auto id = tok_.token_to_id(turn_end)) ids.push_back(*id);
  if (auto eos = tok_.special_tokens().eos; eos && std::find(ids.begin(), ids.end(), *eos) == ids.end()) ids.push_back(*eos);
  return ids;
}

std::string ChatEncoder::decode_answer(const std::vector<int64_t>& ids) const {
  std::vector<int32_t> narrow(ids.begin(), ids.end());
  return tok_.decode(narrow, /*skip_special=*/true);
}

int64_t ChatEncoder::pad_token_id() const {
  return tok_.special_tokens().pad.value_or(tok_.special_tokens().eos.value_or(0));
}

}  // namespace cudal1::trainer

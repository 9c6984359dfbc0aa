#include "tokenizer/tokenizer.h"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {

using nlohmann::json;

struct Tokenizer::Impl {
  std::string context;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Bpe bpe;
  std::vector<AddedToken> added;
  std::vector<std::string> added_bytes;  // what each added token decodes to
  std::unordered_map<int32_t, std::size_t> added_by_id;
  std::unordered_map<std::string, int32_t> added_by_content;
  AddedTokenMatcher raw_matcher, normalized_matcher;
  std::vector<int32_t> prefix_ids, suffix_ids;  // post_processor's single-sequence template
  SpecialTokens special;
  std::optional<std::string> chat_template;
  std::size_t vocab_size = 0, id_bound = 0;
};

namespace {

std::string read_file(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::input, std::string("cannot read ") + what,
                "a Hugging Face model folder holds tokenizer.json and tokenizer_config.json", path.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_json(std::string_view text, const std::string& context) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorKind::input, std::string("not valid JSON: ") + e.what(), {}, context);
  }
}

Error unsupported(const std::string& field, const std::string& what, const std::string& supported,
                  const std::string& context) {
  return Error(ErrorKind::input, "unsupported " + field + ": " + what, "supported: " + supported, context);
}

void check_decoder(const json& j, const std::string& context) {
  const char* supported = "\"decoder\": {\"type\": \"ByteLevel\"} (byte-level BPE)";
  if (!j.is_object()) throw unsupported("decoder", j.is_null() ? "null" : j.dump(), supported, context);
  std::string type = j.value("type", "");
  if (type == "ByteLevel") return;
  // A Sequence holding just ByteLevel is the same decoder.
  if (type == "Sequence" && j.contains("decoders") && j["decoders"].is_array() && j["decoders"].size() == 1) {
    check_decoder(j["decoders"][0], context);
    return;
  }
  throw unsupported("decoder", "type \"" + type + "\"", supported, context);
}

// The post_processor's single-sequence template: the ids that go before and after the text when
// encoding with add_special.
void read_post_processor(const json& j, std::vector<int32_t>& prefix_ids, std::vector<int32_t>& suffix_ids,
                         const std::string& context) {
  const char* supported = "null, ByteLevel, TemplateProcessing, or a Sequence of those";
  if (j.is_null()) return;
  std::string type = j.value("type", "");
  if (type == "ByteLevel") return;  // offsets only; ids are untouched
  if (type == "Sequence") {
    for (const auto& p : j.value("processors", json::array())) read_post_processor(p, prefix_ids, suffix_ids, context);
    return;
  }
  if (type != "TemplateProcessing") throw unsupported("post_processor", "type \"" + type + "\"", supported, context);
  const json& specials = j.value("special_tokens", json::object());
  bool seen_sequence = false;
  std::vector<int32_t> prefix, suffix;
  for (const auto& item : j.value("single", json::array())) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
    } else if (item.contains("SpecialToken")) {
      std::string name = item["SpecialToken"].value("id", "");
      if (!specials.contains(name) || !specials[name].contains("ids"))
        throw Error(ErrorKind::input, "post_processor.single names \"" + name + "\", which special_tokens does not define",
                    {}, context);
      for (const auto& id : specials[name]["ids"]) (seen_sequence ? suffix : prefix).push_back(id.get<int32_t>());
    } else {
      throw unsupported("post_processor.single item", item.dump(), "SpecialToken and Sequence", context);
    }
  }
  prefix_ids.insert(prefix_ids.end(), prefix.begin(), prefix.end());
  suffix_ids.insert(suffix_ids.end(), suffix.begin(), suffix.end());
}

// tokenizer_config.json spells special tokens as a string, as {"content": ...}, or null.
std::string config_token(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return {};
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

std::optional<std::string> config_chat_template(const json& config, const std::string& context) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    // Several named templates: transformers uses "default" unless told otherwise.
    std::string names;
    for (const auto& item : t) {
      std::string name = item.value("name", "");
      if (name == "default" && item.contains("template")) return item["template"].get<std::string>();
      names += (names.empty() ? "" : ", ") + name;
    }
    throw Error(ErrorKind::input, "chat_template is a list without a \"default\" entry (has: " + names + ")",
                "pass --chat-format chatml|llama3 to choose a layout explicitly", context);
  }
  throw Error(ErrorKind::input, "chat_template is neither a string nor a list of {name, template}", {}, context);
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json, const std::string& context) {
  json j = parse_json(tokenizer_json, context);
  if (!j.is_object()) throw Error(ErrorKind::input, "tokenizer.json is not a JSON object", {}, context);
  auto impl = std::make_shared<Impl>();
  impl->context = context;
  if (!j.contains("model"))
    throw Error(ErrorKind::input, "\"model\" is missing", "a tokenizer.json holds model.vocab and model.merges", context);
  impl->bpe = Bpe::from_json(j["model"], context);
  impl->normalizer = Normalizer::from_json(j.value("normalizer", json()), context);
  impl->pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", json()), context);
  check_decoder(j.value("decoder", json()), context);
  // truncation and padding are batch settings of HF's Python API, not part of what ids a text
  // becomes; the trainer does its own.

  impl->added = added_tokens_from_json(j.value("added_tokens", json()), context);
  std::size_t extra = 0;
  int32_t max_id = impl->bpe.max_id();
  for (std::size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& t = impl->added[i];
    // HF gives an added token the model's id for the same text; a different token at that id
    // would make HF renumber it (and warn), so our ids would no longer match its.
    const std::string* model_token = impl->bpe.id_to_token(t.id);
    auto model_id = impl->bpe.token_to_id(t.content);
    if ((model_token && *model_token != t.content) || (model_id && *model_id != t.id)) {
      throw Error(ErrorKind::input,
                  "added_tokens[" + std::to_string(i) + "] \"" + t.content + "\" has id " + std::to_string(t.id) +
                      ", which disagrees with model.vocab",
                  "an added token's id must be its model.vocab id, or an id model.vocab does not use", context);
    }
    if (!model_id) ++extra;
    impl->added_by_id[t.id] = i;
    impl->added_by_content[t.content] = t.id;
    impl->added_bytes.push_back(token_to_bytes(t.content));
    max_id = std::max(max_id, t.id);
  }
  impl->vocab_size = impl->bpe.size() + extra;
  impl->id_bound = static_cast<std::size_t>(max_id + 1);
  std::vector<AddedToken> raw, normalized;
  for (const AddedToken& t : impl->added) (t.normalized ? normalized : raw).push_back(t);
  impl->raw_matcher = AddedTokenMatcher(raw, &impl->normalizer);
  impl->normalized_matcher = AddedTokenMatcher(normalized, &impl->normalizer);
  read_post_processor(j.value("post_processor", json()), impl->prefix_ids, impl->suffix_ids, context);

  if (!config_json.empty()) {
    std::string config_context = context + " (tokenizer_config.json)";
    json config = parse_json(config_json, config_context);
    if (!config.is_object()) throw Error(ErrorKind::input, "tokenizer_config.json is not a JSON object", {}, config_context);
    auto role = [&](const char* key, std::optional<int32_t>& id, std::string& text) {
      text = config_token(config, key);
      if (text.empty()) return;
      auto found = impl->added_by_content.find(text);
      if (found != impl->added_by_content.end()) {
        id = found->second;
      } else if (auto model_id = impl->bpe.token_to_id(text)) {
        id = *model_id;
      } else {
        throw Error(ErrorKind::input, std::string(key) + " \"" + text + "\" is not a token of tokenizer.json", {},
                    config_context);
      }
    };
    role("bos_token", impl->special.bos, impl->special.bos_text);
    role("eos_token", impl->special.eos, impl->special.eos_text);
    role("pad_token", impl->special.pad, impl->special.pad_text);
    role("unk_token", impl->special.unk, impl->special.unk_text);
    impl->chat_template = config_chat_template(config, config_context);
  }
  Tokenizer tok;
  tok.impl_ = std::move(impl);
  return tok;
}

Tokenizer Tokenizer::from_files(const std::filesystem::path& tokenizer_json,
                                const std::optional<std::filesystem::path>& tokenizer_config) {
  std::string tj = read_file(tokenizer_json, "tokenizer.json");
  std::string config = tokenizer_config ? read_file(*tokenizer_config, "tokenizer_config.json") : std::string();
  return from_json(tj, config, tokenizer_json.string());
}

Tokenizer Tokenizer::from_directory(const std::filesystem::path& dir) {
  auto config = dir / "tokenizer_config.json";
  Tokenizer tok = from_files(dir / "tokenizer.json",
                             std::filesystem::exists(config) ? std::optional(config) : std::nullopt);
  // Newer checkpoints keep the template beside the config instead of inside it.
  auto jinja = dir / "chat_template.jinja";
  if (!tok.impl_->chat_template && std::filesystem::exists(jinja)) {
    auto impl = std::make_shared<Impl>(*tok.impl_);
    impl->chat_template = read_file(jinja, "chat_template.jinja");
    tok.impl_ = std::move(impl);
  }
  return tok;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  const Impl& im = *impl_;
  if (!is_valid_utf8(text))
    throw Error(ErrorKind::input, "text to encode is not valid UTF-8", "decode bytes with replacement first", im.context);
  std::vector<int32_t> ids;
  if (add_special) ids = im.prefix_ids;
  std::vector<std::string> pieces;
  auto encode_plain = [&](std::string_view s) {
    pieces.clear();
    im.pre_tokenizer.split(s, pieces);
    for (const std::string& p : pieces) im.bpe.encode(p, ids);
  };
  for (const Segment& seg : im.raw_matcher.split(text)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    if (im.normalizer.kind() == Normalizer::Kind::none && im.normalized_matcher.empty()) {
      encode_plain(part);
      continue;
    }
    // Normalisation happens here, after the raw added tokens are out: they are never normalised.
    std::string norm = im.normalizer.apply(part);
    for (const Segment& s2 : im.normalized_matcher.split(norm)) {
      if (s2.id >= 0) {
        ids.push_back(s2.id);
      } else {
        encode_plain(std::string_view(norm).substr(s2.begin, s2.end - s2.begin));
      }
    }
  }
  if (add_special) ids.insert(ids.end(), im.suffix_ids.begin(), im.suffix_ids.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const Impl& im = *impl_;
  std::string bytes;
  for (int32_t id : ids) {
    auto added = im.added_by_id.find(id);
    if (added != im.added_by_id.end()) {
      if (skip_special && im.added[added->second].special) continue;
      // Added tokens go through the byte-level decoder too, as in HF: "<|im_end|>" is its own
      // spelling, while an added "naïve" decodes its "ï" as the byte 0xEF.
      bytes += im.added_bytes[added->second];
    } else if (const std::string* b = im.bpe.id_to_bytes(id)) {
      bytes += *b;
    }
  }
  return utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->added_by_content.find(std::string(token));
  if (it != impl_->added_by_content.end()) return it->second;
  return impl_->bpe.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  auto it = impl_->added_by_id.find(id);
  if (it != impl_->added_by_id.end()) return impl_->added[it->second].content;
  if (const std::string* t = impl_->bpe.id_to_token(id)) return *t;
  return std::nullopt;
}

std::size_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
std::size_t Tokenizer::id_bound() const { return impl_->id_bound; }

bool Tokenizer::is_special(int32_t id) const {
  auto it = impl_->added_by_id.find(id);
  return it != impl_->added_by_id.end() && impl_->added[it->second].special;
}

const SpecialTokens& Tokenizer::special_tokens() const { return impl_->special; }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }
const std::optional<std::string>& Tokenizer::chat_template_text() const { return impl_->chat_template; }

ChatTemplate Tokenizer::chat_template(std::optional<ChatFormat> format) const {
  const Impl& im = *impl_;
  if (format) {
    // An explicit layout still takes the template's default system message when it has one.
    std::optional<std::string> system;
    if (*format == ChatFormat::chatml && im.chat_template) {
      try {
        ChatTemplate t = ChatTemplate::detect(*im.chat_template, im.special.bos_text, im.context);
        if (t.format() == ChatFormat::chatml) system = t.default_system();
      } catch (const Error&) {
      }
    }
    return ChatTemplate::with_format(*format, im.special.bos_text, std::move(system));
  }
  if (!im.chat_template) {
    throw Error(ErrorKind::input, "the tokenizer has no chat_template",
                "pass --chat-format chatml|llama3 to choose a layout explicitly", im.context);
  }
  return ChatTemplate::detect(*im.chat_template, im.special.bos_text, im.context);
}

std::string Tokenizer::apply_chat_template(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                           std::optional<ChatFormat> format) const {
  return chat_template(format).render(messages, add_generation_prompt);
}

}  // namespace cudal1::tokenizer

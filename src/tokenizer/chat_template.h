// tokenizer/chat_template.h — chat prompts in the two layouts this project's models use, chosen
// by recognising the `chat_template` text of tokenizer_config.json.
//
// We do not interpret Jinja. A template is recognised by the markers it writes:
//   - ChatML (Qwen2, Qwen2.5): "<|im_start|>role\ncontent<|im_end|>\n" per message, with the
//     template's default system message (a literal "<|im_start|>system\n...<|im_end|>\n" in it,
//     such as Qwen2.5's "You are Qwen, created by Alibaba Cloud...") put first when the
//     conversation has no system message;
//   - Llama-3 (3.0 Instruct): "<|begin_of_text|>" then "<|start_header_id|>role<|end_header_id|>
//     \n\ncontent<|eot_id|>" per message, content trimmed as the template's `| trim` does.
// add_generation_prompt appends the assistant's opening. Anything else is refused with an Error
// that names the supported families and the explicit override (--chat-format chatml|llama3).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cudal1::tokenizer {

enum class ChatFormat { chatml, llama3 };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// "chatml" / "llama3" -> the format; throws cudal1::Error (usage) naming the choices.
ChatFormat parse_chat_format(std::string_view name);
const char* chat_format_name(ChatFormat format);

class ChatTemplate {
 public:
  // Recognises `template_text`. `bos_token` is what Llama-3 prompts start with (the config's
  // bos_token). Throws cudal1::Error (input) for a template of another family; `context` names
  // the file it came from.
  static ChatTemplate detect(std::string_view template_text, const std::string& bos_token,
                             const std::string& context = "chat_template");

  // An explicit layout (--chat-format), for models whose template is not recognised. No default
  // system message unless given.
  static ChatTemplate with_format(ChatFormat format, const std::string& bos_token,
                                  std::optional<std::string> default_system = std::nullopt);

  // The prompt text (then encode it with add_special = false: the special tokens are in it).
  // Throws cudal1::Error (usage) for a role the layout cannot express (tool calls).
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  ChatFormat format() const { return format_; }
  const std::optional<std::string>& default_system() const { return default_system_; }

 private:
  ChatFormat format_ = ChatFormat::chatml;
  std::string bos_token_;
  std::optional<std::string> default_system_;
};

// The Jinja string literals inside {{ }} / {% %} blocks of a template, escapes decoded.
std::vector<std::string> jinja_string_literals(std::string_view template_text);

}  // namespace cudal1::tokenizer

#include "tokenizer/chat_template.h"

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {
namespace {

const char* kFamilies =
    "supported chat templates: ChatML (Qwen2, Qwen2.5: <|im_start|> / <|im_end|>) and Llama-3 (3.0 Instruct: "
    "<|start_header_id|> / <|end_header_id|> / <|eot_id|>); pass --chat-format chatml|llama3 to choose a layout "
    "explicitly";

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

}  // namespace

ChatFormat parse_chat_format(std::string_view name) {
  if (name == "chatml") return ChatFormat::chatml;
  if (name == "llama3") return ChatFormat::llama3;
  throw Error(ErrorKind::usage, "unknown chat format \"" + std::string(name) + "\"", "choose chatml or llama3");
}

const char* chat_format_name(ChatFormat format) { return format == ChatFormat::chatml ? "chatml" : "llama3"; }

std::vector<std::string> jinja_string_literals(std::string_view t) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < t.size()) {
    // Only code inside blocks holds literals; text outside them is output as is, apostrophes
    // included.
    std::size_t open = t.find('{', i);
    if (open == std::string_view::npos || open + 1 >= t.size()) break;
    char kind = t[open + 1];
    if (kind != '{' && kind != '%') {
      i = open + 1;
      continue;
    }
    std::string_view close = kind == '{' ? "}}" : "%}";
    i = open + 2;
    while (i < t.size() && t.substr(i, 2) != close) {
      char q = t[i];
      if (q != '\'' && q != '"') {
        ++i;
        continue;
      }
      std::string lit;
      for (++i; i < t.size() && t[i] != q; ++i) {
        if (t[i] == '\\' && i + 1 < t.size()) {
          char e = t[++i];
          switch (e) {
            case 'n': lit += '\n'; break;
            case 't': lit += '\t'; break;
            case 'r': lit += '\r'; break;
            default: lit += e; break;  // \\ \' \" and anything else: the character itself
          }
        } else {
          lit += t[i];
        }
      }
      ++i;  // the closing quote
      out.push_back(std::move(lit));
    }
    i += 2;
  }
  return out;
}

ChatTemplate ChatTemplate::detect(std::string_view text, const std::string& bos_token, const std::string& context) {
  bool chatml = contains(text, "<|im_start|>") && contains(text, "<|im_end|>");
  bool llama3 = contains(text, "<|start_header_id|>") && contains(text, "<|end_header_id|>") && contains(text, "<|eot_id|>");
  if (chatml && !llama3) {
    // The default system message is a literal that opens a system turn and closes it, with the
    // text in between (Qwen2.5: '<|im_start|>system\nYou are Qwen, ...<|im_end|>\n'). A literal
    // that stops after "system\n" is the one that prints the user's own system message.
    std::optional<std::string> default_system;
    const std::string open = "<|im_start|>system\n";
    for (const std::string& lit : jinja_string_literals(text)) {
      if (lit.rfind(open, 0) != 0) continue;
      auto end = lit.find("<|im_end|>", open.size());
      if (end == std::string::npos || end == open.size()) continue;
      default_system = lit.substr(open.size(), end - open.size());
      break;
    }
    return with_format(ChatFormat::chatml, bos_token, std::move(default_system));
  }
  if (llama3 && !chatml) {
    // Llama-3.1 and later always write a system turn with "Cutting Knowledge Date" and today's
    // date; rendering 3.0's layout for them would silently differ from HF.
    if (contains(text, "Cutting Knowledge Date")) {
      throw Error(ErrorKind::input,
                  "this is a Llama-3.1-or-later chat template (it writes a dated system header), which is not supported",
                  std::string(kFamilies) + " (llama3 renders the Llama-3.0 layout, without the date header)", context);
    }
    return with_format(ChatFormat::llama3, bos_token);
  }
  throw Error(ErrorKind::input, "unrecognised chat template", kFamilies, context);
}

ChatTemplate ChatTemplate::with_format(ChatFormat format, const std::string& bos_token,
                                       std::optional<std::string> default_system) {
  ChatTemplate t;
  t.format_ = format;
  t.bos_token_ = bos_token.empty() && format == ChatFormat::llama3 ? "<|begin_of_text|>" : bos_token;
  t.default_system_ = std::move(default_system);
  return t;
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  for (const ChatMessage& m : messages) {
    if (m.role == "tool" || m.role == "ipython") {
      throw Error(ErrorKind::usage, "chat role \"" + m.role + "\" is not supported",
                  "tool calls and tool results need the model's own Jinja template; use system, user and assistant");
    }
    if (!is_valid_utf8(m.content) || !is_valid_utf8(m.role))
      throw Error(ErrorKind::usage, "a chat message is not valid UTF-8", {}, "role " + m.role);
  }
  std::string out;
  if (format_ == ChatFormat::chatml) {
    if (default_system_ && (messages.empty() || messages.front().role != "system"))
      out += "<|im_start|>system\n" + *default_system_ + "<|im_end|>\n";
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
  } else {
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (i == 0) out += bos_token_;
      out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n";
      out += python_strip(messages[i].content);
      out += "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  }
  return out;
}

}  // namespace cudal1::tokenizer

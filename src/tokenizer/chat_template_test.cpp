// Unit tests for tokenizer/chat_template.h: recognising templates by their text, and refusing
// the ones we cannot render faithfully. Byte-exact renderings against transformers are in
// fixture_test.cpp.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/chat_template.h"

namespace cudal1::tokenizer {
namespace {

TEST(ChatTemplate, ReadsJinjaStringLiteralsInsideBlocksOnly) {
  auto lits = jinja_string_literals("Don't {{ 'a\\nb' + \"c\\\"d\" }} it's {% if x == 'y' %}");
  ASSERT_EQ(lits.size(), 3u);
  EXPECT_EQ(lits[0], "a\nb");
  EXPECT_EQ(lits[1], "c\"d");
  EXPECT_EQ(lits[2], "y");
}

TEST(ChatTemplate, ChatmlWithoutDefaultSystemAddsNone) {
  auto t = ChatTemplate::detect("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + "
                                "'<|im_end|>\\n'}}{% endfor %}",
                                "");
  EXPECT_EQ(t.format(), ChatFormat::chatml);
  EXPECT_FALSE(t.default_system());
  std::vector<ChatMessage> msgs{{"user", "hi"}};
  EXPECT_EQ(t.render(msgs, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, UnrecognisedTemplateNamesFamiliesAndOverride) {
  try {
    ChatTemplate::detect("{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}", "<s>");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.hint().find("ChatML"), std::string::npos);
    EXPECT_NE(e.hint().find("Llama-3"), std::string::npos);
    EXPECT_NE(e.hint().find("--chat-format chatml|llama3"), std::string::npos);
  }
}

TEST(ChatTemplate, Llama31DatedTemplateIsRefused) {
  EXPECT_THROW(ChatTemplate::detect("{{- bos_token }}{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
                                    "{{- 'Cutting Knowledge Date: December 2023\\n' }}{{ '<|eot_id|>' }}",
                                    "<|begin_of_text|>"),
               Error);
}

TEST(ChatTemplate, ExplicitFormatOverridesAndParses) {
  EXPECT_EQ(parse_chat_format("llama3"), ChatFormat::llama3);
  EXPECT_EQ(parse_chat_format("chatml"), ChatFormat::chatml);
  EXPECT_THROW(parse_chat_format("mistral"), Error);
  auto t = ChatTemplate::with_format(ChatFormat::llama3, "<|begin_of_text|>");
  std::vector<ChatMessage> msgs{{"user", " x "}};
  EXPECT_EQ(t.render(msgs, false), "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

TEST(ChatTemplate, ToolRoleIsRefused) {
  auto t = ChatTemplate::with_format(ChatFormat::chatml, "");
  std::vector<ChatMessage> msgs{{"tool", "{}"}};
  EXPECT_THROW(t.render(msgs, false), Error);
}

}  // namespace
}  // namespace cudal1::tokenizer

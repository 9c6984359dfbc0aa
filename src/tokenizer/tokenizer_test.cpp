// Tests of tokenizer/tokenizer.h on small hand-made tokenizer.json files: malformed or
// unsupported files give a clear Error naming the field, and the merge loop's order is HF's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace cudal1::tokenizer {
namespace {

using nlohmann::json;

// A GPT-2-like tokenizer: the 256 byte characters, then merges that build "ab", "abc", "aa".
json minimal() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_token(std::string(1, static_cast<char>(b)))] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab["aa"] = 258;
  vocab["<|end|>"] = 259;
  return {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 259}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b", json::array({"ab", "c"}), "a a"})}}},
  };
}

// The Error that loading `j` throws (fails the test when it loads).
Error load_error(const json& j) {
  try {
    Tokenizer::from_json(j.dump(), {}, "test.json");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error(ErrorKind::internal, "none");
}

void expect_error(const json& j, const std::string& needle) {
  Error e = load_error(j);
  EXPECT_EQ(e.kind(), ErrorKind::input) << e.describe();
  EXPECT_NE(e.describe().find(needle), std::string::npos) << e.describe();
  EXPECT_EQ(e.context(), "test.json");
}

TEST(Tokenizer, MinimalLoadsAndMergesByRank) {
  Tokenizer t = Tokenizer::from_json(minimal().dump());
  EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{257}));
  // "a a" ranks after "a b": "aab" is a + ab, not aa + b.
  EXPECT_EQ(t.encode("aab"), (std::vector<int32_t>{'a', 256}));
  // Equal ranks merge leftmost first.
  EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{258, 'a'}));
  EXPECT_EQ(t.encode("x<|end|>y"), (std::vector<int32_t>{'x', 259, 'y'}));
  EXPECT_EQ(t.decode(t.encode("x<|end|>y"), true), "xy");
  EXPECT_EQ(t.vocab_size(), 260u);
  EXPECT_EQ(t.id_to_token(256), "ab");
  EXPECT_EQ(t.token_to_id("<|end|>"), 259);
  EXPECT_FALSE(t.id_to_token(9999));
  EXPECT_THROW(t.encode("\xFF"), Error);
}

TEST(Tokenizer, RepeatedPiecesComeFromTheCacheUnchanged) {
  Tokenizer t = Tokenizer::from_json(minimal().dump());
  auto first = t.encode("abc abc aab");
  EXPECT_EQ(t.encode("abc abc aab"), first);
  Tokenizer copy = t;  // copies share state
  EXPECT_EQ(copy.encode("abc abc aab"), first);
}

TEST(Regex, WhitespaceMeansUnicodeWhiteSpaceAsInOniguruma) {
  // PCRE2's own \s takes U+180E; Oniguruma's (HF's) does not.
  Regex s(R"(\s+)");
  EXPECT_TRUE(s.matches_at("\u3000", 0));
  EXPECT_TRUE(s.matches_at("\u0085", 0));
  EXPECT_FALSE(s.matches_at("\u180e", 0));
  Regex not_s(R"([^\s\p{L}]+)");
  EXPECT_TRUE(not_s.matches_at("\u180e", 0));
  EXPECT_FALSE(not_s.matches_at(" ", 0));
  EXPECT_EQ(oniguruma_compatible(R"(\Q\s\E[\]\s]\S)"),
            std::string(R"(\Q\s\E[\])") + R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}])" +
                R"([^\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}])");
}

TEST(TokenizerErrors, NotJson) {
  EXPECT_THROW(Tokenizer::from_json("{not json"), Error);
  try {
    Tokenizer::from_json("{not json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.message().find("not valid JSON"), std::string::npos);
  }
}

TEST(TokenizerErrors, MissingModel) {
  json j = minimal();
  j.erase("model");
  expect_error(j, "\"model\" is missing");
}

TEST(TokenizerErrors, UnsupportedModelType) {
  json j = minimal();
  j["model"]["type"] = "Unigram";
  expect_error(j, "model.type \"Unigram\"");
}

TEST(TokenizerErrors, MergeNamingUnknownToken) {
  json j = minimal();
  j["model"]["merges"].push_back("zz q");
  expect_error(j, "model.merges[3] names \"zz\"");
  j = minimal();
  j["model"]["merges"].push_back(json::array({"b", "c"}));  // "bc" is not in the vocabulary
  expect_error(j, "names \"bc\"");
  j = minimal();
  j["model"]["merges"].push_back("a b c");
  expect_error(j, "model.merges[3]");
}

TEST(TokenizerErrors, UnsupportedPieces) {
  json j = minimal();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_error(j, "pre_tokenizer: type \"Metaspace\"");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}},
                                                        {"behavior", "Contiguous"}, {"invert", false}},
                                                       {{"type", "ByteLevel"}}})}};
  expect_error(j, "Split.behavior \"Contiguous\"");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(j, "does not compile");
  j = minimal();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect_error(j, "normalizer: type \"Lowercase\"");
  j = minimal();
  j["decoder"] = {{"type", "Metaspace"}};
  expect_error(j, "decoder");
  j = minimal();
  j["model"]["byte_fallback"] = true;
  expect_error(j, "byte_fallback");
  j = minimal();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_error(j, "post_processor");
  j = minimal();
  j["added_tokens"][0]["id"] = 5;  // id 5 is the byte 0x05 in model.vocab
  expect_error(j, "disagrees with model.vocab");
}

TEST(TokenizerErrors, ConfigNamingUnknownSpecialToken) {
  try {
    Tokenizer::from_json(minimal().dump(), R"({"eos_token": "<|nope|>"})", "test.json");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("eos_token \"<|nope|>\""), std::string::npos) << e.describe();
  }
}

TEST(TokenizerErrors, MissingFileSaysWhichOne) {
  try {
    Tokenizer::from_directory("/nonexistent/model");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.context().find("tokenizer.json"), std::string::npos);
  }
}

TEST(TokenizerErrors, NoChatTemplateNamesTheOverride) {
  Tokenizer t = Tokenizer::from_json(minimal().dump());
  std::vector<ChatMessage> msgs{{"user", "hi"}};
  try {
    t.apply_chat_template(msgs, true);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("--chat-format"), std::string::npos);
  }
  EXPECT_EQ(t.apply_chat_template(msgs, true, ChatFormat::chatml), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace cudal1::tokenizer

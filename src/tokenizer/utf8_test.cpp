// Unit tests for tokenizer/utf8.h and tokenizer/byte_level.h: the lossy repair must replace
// exactly what Rust's from_utf8_lossy replaces, and the byte-level alphabet must round-trip.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LossyReplacesEachMaximalInvalidSubpartOnce) {
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");            // 😀 intact
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), kFffd);                             // truncated: one
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98" "A"), kFffd + "A");
  EXPECT_EQ(utf8_lossy("\x80\x80"), kFffd + kFffd);                         // stray continuations: one each
  EXPECT_EQ(utf8_lossy("\xC0\x80"), kFffd + kFffd);                         // overlong lead: never valid
  EXPECT_EQ(utf8_lossy("\xE0\x80\x80"), kFffd + kFffd + kFffd);             // overlong: E0 needs A0..BF next
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);             // surrogate
  EXPECT_EQ(utf8_lossy("\xE4\xB8" "\xE4\xB8\xAD"), kFffd + "\xE4\xB8\xAD"); // cut 中 then 中
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd); // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xFF"));
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo"));
}

TEST(Utf8, PythonStripTrimsUnicodeWhitespaceOnly) {
  EXPECT_EQ(python_strip("  \t\n hi there \r\n"), "hi there");
  EXPECT_EQ(python_strip("\xC2\xA0x\xE3\x80\x80"), "x");  // NBSP, ideographic space
  EXPECT_EQ(python_strip("\x1Fx"), "x");                  // str.isspace counts U+001F
  EXPECT_EQ(python_strip("\xE2\x80\x8Bx"), "\xE2\x80\x8Bx");  // zero-width space is not whitespace
  EXPECT_EQ(python_strip("   "), "");
}

TEST(ByteLevel, AlphabetRoundTripsEveryByte) {
  EXPECT_EQ(bytes_to_token(" "), "\xC4\xA0");   // Ġ
  EXPECT_EQ(bytes_to_token("\n"), "\xC4\x8A");  // Ċ
  EXPECT_EQ(bytes_to_token("a!~"), "a!~");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(token_to_bytes(bytes_to_token(all)), all);
  // A character outside the alphabet: the token decodes as its own text.
  EXPECT_EQ(token_to_bytes("a b"), "a b");
  EXPECT_FALSE(token_to_bytes_strict("a b"));
}

}  // namespace
}  // namespace cudal1::tokenizer

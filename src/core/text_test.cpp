#include <gtest/gtest.h>

#include <string>

#include "core/text.h"

using cudal1::first_line;
using cudal1::utf8_prefix;

TEST(Text, FirstLineStopsAtTheFirstBreak) {
  EXPECT_EQ(first_line("case 0: RuntimeError: boom\nTraceback ...\n  raise x"), "case 0: RuntimeError: boom");
  EXPECT_EQ(first_line("one line"), "one line");
  EXPECT_EQ(first_line("crlf\r\nnext"), "crlf");
  EXPECT_EQ(first_line("\nafter an empty first line"), "");
  EXPECT_EQ(first_line(""), "");
}

TEST(Text, Utf8PrefixNeverSplitsACharacter) {
  const std::string quoted = "error: \u2018forward\u2019 was not declared";  // each quote is 3 bytes
  EXPECT_EQ(utf8_prefix(quoted, 100), quoted);
  EXPECT_EQ(utf8_prefix(quoted, 7), "error: ");
  EXPECT_EQ(utf8_prefix(quoted, 8), "error: ");   // inside the opening quote
  EXPECT_EQ(utf8_prefix(quoted, 9), "error: ");
  EXPECT_EQ(utf8_prefix(quoted, 10), "error: \u2018");
  EXPECT_EQ(utf8_prefix("", 3), "");
}

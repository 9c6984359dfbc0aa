#include <gtest/gtest.h>

#include "core/text.h"

using cudal1::first_line;

TEST(Text, FirstLineStopsAtTheFirstBreak) {
  EXPECT_EQ(first_line("case 0: RuntimeError: boom\nTraceback ...\n  raise x"), "case 0: RuntimeError: boom");
  EXPECT_EQ(first_line("one line"), "one line");
  EXPECT_EQ(first_line("crlf\r\nnext"), "crlf");
  EXPECT_EQ(first_line("\nafter an empty first line"), "");
  EXPECT_EQ(first_line(""), "");
}

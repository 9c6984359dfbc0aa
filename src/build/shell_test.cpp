#include "build/shell.h"

#include <gtest/gtest.h>

using namespace cudal1;
using Words = std::vector<std::string>;

TEST(Shell, WordsAsTorchQuotesThem) {
  EXPECT_EQ(shell_words(R"(-DPYBIND11_COMPILER_TYPE=\"_gcc\" --compiler-options '-fPIC' -O3)"),
            (Words{R"(-DPYBIND11_COMPILER_TYPE="_gcc")", "--compiler-options", "-fPIC", "-O3"}));
  // '-fPIC' shell-quoted a second time: the inner quotes belong to the word.
  EXPECT_EQ(shell_words(R"(''"'"'-fPIC'"'"'')"), Words{"'-fPIC'"});
}

TEST(Shell, WordsAfterQuoteRemoval) {
  EXPECT_EQ(shell_words("  a\t b  "), (Words{"a", "b"}));
  EXPECT_EQ(shell_words(""), Words{});
  EXPECT_EQ(shell_words("'' x"), (Words{"", "x"}));
  EXPECT_EQ(shell_words(R"("a b"'c d'e\ f)"), Words{"a bc de f"});
  // Inside double quotes a backslash escapes only $ ` " and itself.
  EXPECT_EQ(shell_words(R"("\"\\\$\n")"), Words{R"("\$\n)"});
  // Single quotes make everything literal, even what would be refused unquoted.
  EXPECT_EQ(shell_words("'$(rm -rf /) `x` | ; * ~'"), Words{"$(rm -rf /) `x` | ; * ~"});
}

TEST(Shell, RefusesWhatQuotingAloneDoesNotDecide) {
  for (const char* text : {"$(pwd)", "`pwd`", "$HOME", "${X}", "\"$HOME\"", "\"`pwd`\"", "a | b", "a; b",
                           "a && b", "a > out", "a < in", "(a)", "*.o", "a?", "[ab]", "# note", "~/x",
                           "{a,b}", "a\nb", "'open", "\"open", "trailing\\"})
    EXPECT_EQ(shell_words(text), std::nullopt) << text;
}

TEST(Shell, QuoteLeavesPlainWordsAlone) {
  EXPECT_EQ(shell_quote("-DX=1"), "-DX=1");
  EXPECT_EQ(shell_quote("/usr/local/cuda/include"), "/usr/local/cuda/include");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), R"('it'\''s')");
  EXPECT_EQ(shell_join({"-O3", "a b", ""}), "-O3 'a b' ''");
}

TEST(Shell, JoinThenWordsRoundTrips) {
  Words words = {"-O3", "", "a b", "it's", R"(-DT="_gcc")", "$(rm -rf /)", "`id`", "*.o", "a\\b", "tab\there",
                 "new\nline", "~", "{x}", "#", "'", "\"", "-Xcompiler=-fPIC,-Wall"};
  EXPECT_EQ(shell_words(shell_join(words)), words);
}

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/hash.h"

using namespace cudal1;

TEST(Hash, KnownSha256Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Hash, ReadFileMissingIsAnInputError) {
  try {
    read_file("/nonexistent/cudal1/file.py");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.describe().find("hint"), std::string::npos);
    EXPECT_EQ(error_exit_code(e.kind()), 3);
  }
}

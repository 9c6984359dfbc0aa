#include <gtest/gtest.h>

#include "core/device.h"
#include "core/error.h"

using namespace cudal1;

TEST(Device, ParsesTheNamesEveryCommandAccepts) {
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_FALSE(Device::parse("cpu").is_cuda());
  EXPECT_EQ(Device::parse("cuda").str(), "cuda");
  EXPECT_TRUE(Device::parse("cuda").is_cuda());
  EXPECT_FALSE(Device::parse("cuda").index.has_value());
  EXPECT_EQ(Device::parse("cuda:3").index, 3);
  EXPECT_EQ(Device::parse("cuda:3").str(), "cuda:3");
  EXPECT_EQ(Device::parse("cuda:007").str(), "cuda:7");  // one spelling per device downstream
}

TEST(Device, RefusesEverythingElseNamingTheFlag) {
  for (const char* bad : {"", "gpu", "cudafoo", "cuda:", "cuda:-1", "cuda:1x", "cuda:99999", "CPU", " cuda", "cuda:0 "}) {
    try {
      Device::parse(bad, "--eval-device");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
      EXPECT_NE(e.hint().find("--eval-device"), std::string::npos) << bad;
    }
  }
}

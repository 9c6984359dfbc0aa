#include <gtest/gtest.h>

#include <openssl/evp.h>

#include "core/encoding.h"
#include "core/error.h"
#include "evaluator/verdicts.h"

using namespace cudal1;

namespace {

std::string b64(const void* data, std::size_t n) {
  std::string out(4 * ((n + 2) / 3), '\0');
  int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), static_cast<const unsigned char*>(data), int(n));
  out.resize(std::size_t(len));
  return out;
}

json sampled(std::vector<float> values, std::vector<int64_t> positions, int64_t numel) {
  return {{"dtype", "float32"}, {"numel", numel}, {"positions", b64(positions.data(), positions.size() * 8)},
          {"values", b64(values.data(), values.size() * 4)}};
}

}  // namespace

TEST(Encoding, Base64RoundTripsEveryPaddingLength) {
  for (std::string s : {"", "a", "ab", "abc", "abcd"}) {
    auto back = base64_decode(b64(s.data(), s.size()));
    EXPECT_EQ(std::string(back.begin(), back.end()), s);
  }
  EXPECT_THROW(base64_decode("abc"), Error);
}

TEST(Samples, AgreeWithinToleranceAndSayWhatDiffers) {
  json ref = json::array({sampled({1.0f, 2.0f, 3.0f}, {5, 9, 11}, 100)});
  json same = json::array({sampled({1.001f, 2.0f, 3.0f}, {5, 9, 11}, 100)});
  EXPECT_EQ(compare_samples(same, ref, ToleranceMode::standard), "");
  json stale = json::array({sampled({1.0f, -2.0f, 3.0f}, {5, 9, 11}, 100)});
  EXPECT_NE(compare_samples(stale, ref, ToleranceMode::standard).find("1 of 3 sampled elements"), std::string::npos);
  json moved = json::array({sampled({1.0f, 2.0f, 3.0f}, {5, 9, 12}, 100)});
  EXPECT_NE(compare_samples(moved, ref, ToleranceMode::standard).find("positions differ"), std::string::npos);
  json shrunk = json::array({sampled({1.0f, 2.0f, 3.0f}, {5, 9, 11}, 50)});
  EXPECT_NE(compare_samples(shrunk, ref, ToleranceMode::standard).find("50 elements"), std::string::npos);
  EXPECT_NE(compare_samples(json::array({nullptr}), ref, ToleranceMode::standard).find("not a readable tensor"),
            std::string::npos);
}

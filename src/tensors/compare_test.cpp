#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tensors/compare.h"
#include "tensors/tensor_file.h"
#include "tensors/test_tensors.h"

using namespace cudal1;
using namespace cudal1::test;

TEST(Compare, WithinToleranceAndOutside) {
  auto e = f32({1.0f, 2.0f, 100.0f});
  auto ok = f32({1.005f, 2.01f, 100.9f});  // 100.9: |err| 0.9 <= 0.01 + 0.01 * 100
  EXPECT_TRUE(compare_values(e, ok, {1e-2, 1e-2}).passed);
  auto bad = f32({1.0f, 2.5f, 100.0f});
  Comparison c = compare_values(e, bad, {1e-2, 1e-2});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_NEAR(c.max_abs_error, 0.5, 1e-6);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_NE(c.summary().find("expected 2"), std::string::npos);
}

TEST(Compare, NanAndInfPlacementMustMatch) {
  float nan = std::nanf(""), inf = INFINITY;
  EXPECT_TRUE(compare_values(f32({nan, inf, 1}), f32({nan, inf, 1}), {1e-2, 1e-2}).passed);
  Comparison c = compare_values(f32({nan, 1, 1}), f32({1, 1, 1}), {1e-2, 1e-2});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nan_mismatches, 1);
  EXPECT_FALSE(compare_values(f32({inf}), f32({-inf}), {1e-2, 1e-2}).passed);
  EXPECT_FALSE(compare_values(f32({1}), f32({nan}), {1e-2, 1e-2}).passed);
}

TEST(Compare, ShapeAndDtypeMismatch) {
  EXPECT_FALSE(compare_values(f32({1, 2, 3, 4}, {2, 2}), f32({1, 2, 3, 4}, {4}), {}).same_shape);
  TensorValue d = f32({1});
  d.dtype = DType::f64;
  EXPECT_FALSE(compare_values(f32({1}), d, {}).same_dtype);
}

TEST(Compare, PoisonPatternCountsUnwrittenElements) {
  auto e = f32({1, 2, 3, 4});
  auto a = f32({1, 2, 0, 0});
  std::memset(a.bytes.data() + 8, 0xFE, 8);
  Comparison c = compare_values(e, a, {1e-2, 1e-2});
  EXPECT_EQ(c.poison_hits, 2);
  EXPECT_NE(c.summary().find("never written"), std::string::npos);
}

TEST(Compare, HalfAndBfloat16Decode) {
  TensorValue h;
  h.dtype = DType::f16;
  h.shape = {3};
  uint16_t hv[3] = {0x3C00, 0xC000, 0x0001};  // 1.0, -2.0, smallest subnormal
  h.bytes.resize(6);
  std::memcpy(h.bytes.data(), hv, 6);
  EXPECT_EQ(h.at(0), 1.0);
  EXPECT_EQ(h.at(1), -2.0);
  EXPECT_NEAR(h.at(2), 5.96e-8, 1e-9);
  TensorValue b;
  b.dtype = DType::bf16;
  b.shape = {1};
  uint16_t bv = 0x3FC0;  // 1.5
  b.bytes.resize(2);
  std::memcpy(b.bytes.data(), &bv, 2);
  EXPECT_EQ(b.at(0), 1.5);
}

TEST(Compare, StrictToleranceIsPerDtype) {
  EXPECT_EQ(tolerance_for(DType::f32, ToleranceMode::standard).atol, 1e-2);
  EXPECT_EQ(tolerance_for(DType::f32, ToleranceMode::strict).atol, 1e-4);
  EXPECT_EQ(tolerance_for(DType::bf16, ToleranceMode::strict).rtol, 1e-2);
  EXPECT_EQ(tolerance_for(DType::i64, ToleranceMode::standard).atol, 0.0);
}

TEST(TensorFile, RoundTripAndRejectsMalformed) {
  auto dir = std::filesystem::temp_directory_path() / "cudal1_tf_test";
  std::filesystem::create_directories(dir);
  auto p = dir / "ok.ctf";
  {
    std::ofstream f(p, std::ios::binary);
    float v[2] = {1.5f, -2.0f};
    f << "CUDAL1T1\n{\"dtype\": \"float32\", \"shape\": [2], \"nbytes\": 8}\n";
    f.write(reinterpret_cast<char*>(v), 8);
    f << "{\"kind\": \"other\", \"type\": \"int\"}\n";
  }
  auto values = read_tensor_file(p);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].at(1), -2.0);
  EXPECT_FALSE(values[1].is_tensor);
  EXPECT_EQ(values[1].other_type, "int");

  auto bad = dir / "bad.ctf";
  {
    std::ofstream f(bad, std::ios::binary);
    f << "CUDAL1T1\n{\"dtype\": \"float32\", \"shape\": [4], \"nbytes\": 8}\n12345678";
  }
  EXPECT_THROW(read_tensor_file(bad), Error);
  EXPECT_THROW(read_tensor_file(p, 10), Error);  // over the size limit
  std::filesystem::remove_all(dir);
}

// The lint's quick screens must agree with the full comparison on every kind of element.
TEST(Compare, QuickScreensAgreeWithFullComparison) {
  float nan = std::nanf(""), inf = INFINITY;
  std::vector<float> pool = {0.0f, 1.0f, -1.0f, 1.004f, 1.02f, 100.0f, 100.9f, 102.0f, nan, inf, -inf, 1e-6f};
  for (double tol : {1e-2, 1e-4})
    for (float x : pool)
      for (float y : pool) {
        auto e = f32({x, 1.0f}), a = f32({y, 1.0f});
        bool full = compare_values(e, a, {tol, tol}).passed;
        EXPECT_EQ(all_within(e, a, {tol, tol}), full) << x << " vs " << y << " at " << tol;
        EXPECT_EQ(all_within(f32({x, y}), double(y), {tol, tol}),
                  compare_values(f32({x, y}), f32({y, y}), {tol, tol}).passed)
            << x << " vs constant " << y << " at " << tol;
      }
  EXPECT_FALSE(all_within(f32({1, 2}), f32({1, 2}, {2, 1}), {1e-2, 1e-2}));  // shapes differ
}

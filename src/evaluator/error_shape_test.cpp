// Rounding against systematic errors, on values whose every error is known: the float32 output
// of a computation rounded to bf16 or fp16, the same plus a constant, the same times a factor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "evaluator/error_shape.h"
#include "evaluator/precision.h"

using namespace cudal1;

namespace {

template <typename T>
TensorValue tensor(const std::vector<T>& v, DType dtype, const char* name) {
  TensorValue t;
  t.dtype = dtype;
  t.dtype_text = name;
  t.shape = {int64_t(v.size())};
  t.bytes.resize(v.size() * sizeof(T));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// An oracle of n values spread over both signs and several binades, the same on every machine.
std::vector<double> oracle_values(int n) {
  std::vector<double> v;
  uint64_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(x >> 11) / double(1ull << 53);  // [0, 1)
    v.push_back((u - 0.5) * 6.0 * (1 + (i % 7)));
  }
  return v;
}

// v rounded to nearest with `bits` bits of mantissa kept (bf16: 8, fp16: 11).
double round_mantissa(double v, int bits) {
  if (v == 0) return 0;
  int e;
  double m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
}

ErrorShape shape_of(const std::vector<double>& oracle, double (*candidate)(double)) {
  std::vector<float> actual;
  for (double o : oracle) actual.push_back(float(candidate(o)));
  auto s = error_shape(tensor(actual, DType::f32, "float32"), tensor(oracle, DType::f64, "float64"));
  EXPECT_TRUE(s.has_value());
  return s.value_or(ErrorShape{});
}

}  // namespace

TEST(ErrorShape, RoundingScattersBothWaysAndFollowsNothing) {
  auto oracle = oracle_values(4096);
  for (auto round : {+[](double o) { return round_mantissa(o, 8); }, +[](double o) { return round_mantissa(o, 11); }}) {
    ErrorShape s = shape_of(oracle, round);
    EXPECT_FALSE(s.systematic()) << s.describe();
    EXPECT_FALSE(s.undecided());
    EXPECT_LT(s.explained, 0.1) << s.describe();
    EXPECT_LT(s.same_sign_share, 0.6) << s.describe();
    EXPECT_NE(s.describe().find("scatters like rounding"), std::string::npos) << s.describe();
  }
}

TEST(ErrorShape, AConstantOffsetOrAWrongFactorIsSystematic) {
  auto oracle = oracle_values(4096);
  ErrorShape offset = shape_of(oracle, [](double o) { return o + 0.005; });  // 1.005 typed for 1
  EXPECT_TRUE(offset.systematic()) << offset.describe();
  EXPECT_GT(offset.offset_share, 0.99);
  EXPECT_GT(offset.same_sign_share, 0.99);
  EXPECT_NEAR(offset.mean, 0.005, 1e-5);
  EXPECT_NE(offset.describe().find("not rounding"), std::string::npos) << offset.describe();
  ErrorShape factor = shape_of(oracle, [](double o) { return o * 1.004; });
  EXPECT_TRUE(factor.systematic()) << factor.describe();
  EXPECT_NEAR(factor.factor, 0.004, 1e-5);
  EXPECT_GT(factor.explained, 0.99);
  // Hidden under bf16 rounding of the same size, the offset still shows.
  ErrorShape both = shape_of(oracle, [](double o) { return round_mantissa(o, 8) + 0.01; });
  EXPECT_TRUE(both.systematic()) << both.describe();
}

TEST(ErrorShape, TooFewElementsDecideNothing) {
  ErrorShape s = shape_of(oracle_values(40), [](double o) { return o + 0.005; });
  EXPECT_TRUE(s.undecided());
  EXPECT_FALSE(s.systematic());
  EXPECT_FALSE(error_shape(tensor(std::vector<float>{1, 2}, DType::f32, "float32"),
                           tensor(std::vector<double>{1, 2, 3}, DType::f64, "float64")).has_value());
}

// The ladder's verdict: above the float32 line, a systematic error is incorrect, a rounding one is
// reduced precision (the only one worth accepting), one too small to tell is reduced, undecided.
TEST(ErrorShape, TheLadderTellsSystematicFromReduced) {
  nlohmann::json rungs = {{"as_run", {0.0}}, {"fp16_cast", {4e-4}}, {"bf16_cast", {3e-3}}};
  auto oracle = oracle_values(4096);
  ErrorShape offset = shape_of(oracle, [](double o) { return o + 0.005; });
  ErrorShape rounding = shape_of(oracle, [](double o) { return round_mantissa(o, 8); });
  PrecisionVerdict wrong = judge_precision(rungs, {3e-3}, {offset});
  EXPECT_TRUE(wrong.systematic);
  EXPECT_FALSE(wrong.reduced);
  EXPECT_NE(wrong.evidence.find("one constant offset"), std::string::npos) << wrong.evidence;
  PrecisionVerdict low = judge_precision(rungs, {3e-3}, {rounding});
  EXPECT_TRUE(low.reduced);
  EXPECT_TRUE(low.rounding_like);
  EXPECT_FALSE(low.systematic);
  PrecisionVerdict unknown = judge_precision(rungs, {3e-3});
  EXPECT_TRUE(unknown.reduced);
  EXPECT_FALSE(unknown.rounding_like);
  // Below the line the shape does not matter: float32's own rounding is not judged.
  EXPECT_FALSE(judge_precision(rungs, {1e-8}, {offset}).systematic);
  // A systematic output outweighs a reduced one beside it.
  PrecisionVerdict mixed = judge_precision({{"as_run", {0.0, 0.0}}, {"bf16_cast", {3e-3, 3e-3}}}, {3e-3, 3e-3}, {rounding, offset});
  EXPECT_TRUE(mixed.systematic);
  EXPECT_NE(mixed.evidence.find("output 1"), std::string::npos) << mixed.evidence;
}

#include "evaluator/error_shape.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cudal1 {

namespace {

// Below this many differing elements a coin toss can look one-sided.
constexpr int64_t kMinElements = 64;
// Rounding leaves a fit of offset + factor x oracle with next to nothing (about 2/n of its energy
// by chance); a systematic error leaves it nearly all, and an offset as large as the rounding
// beside it still a third.
constexpr double kExplainedLimit = 0.25;
// Rounding to nearest picks each side about half the time; three elements in four on one side,
// over 64 or more, happens by chance about once in 30000.
constexpr double kSameSignLimit = 0.75;

std::string percent(double share) { return std::to_string(int(std::lround(100 * share))) + "%"; }

std::string signed_sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2g", v);
  return buf;
}

}  // namespace

bool ErrorShape::undecided() const { return elements < kMinElements; }

bool ErrorShape::systematic() const {
  return !undecided() && (explained > kExplainedLimit || same_sign_share > kSameSignLimit);
}

std::string ErrorShape::describe() const {
  if (undecided())
    return "only " + std::to_string(elements) + " elements differ from the oracle, too few to tell rounding from a "
           "systematic error";
  std::string s = percent(offset_share) + " of the error's energy is one constant offset (mean " + signed_sci(mean) +
                  ", rms " + signed_sci(rms).substr(1) + "), " + percent(explained - offset_share) +
                  " more follows the output's values (a factor of " + signed_sci(factor) + "), and " +
                  percent(same_sign_share) + " of the " + std::to_string(elements) + " differing elements err on the same side";
  return s + (systematic() ? ": a systematic error (a bias, a wrong constant or an approximation), not rounding, which scatters both ways"
                           : ": it scatters like rounding");
}

nlohmann::json ErrorShape::to_json() const {
  return {{"elements", elements}, {"mean", mean}, {"rms", rms}, {"offset_share", offset_share},
          {"factor", factor}, {"explained", explained}, {"same_sign_share", same_sign_share},
          {"systematic", systematic()}, {"undecided", undecided()}};
}

std::optional<ErrorShape> error_shape(const TensorValue& actual, const TensorValue& oracle) {
  if (!actual.is_tensor || !oracle.is_tensor || !dtype_is_float(actual.dtype) ||
      !dtype_is_float(oracle.dtype) || actual.shape != oracle.shape)
    return std::nullopt;
  // Two passes: the means first, then centred sums, so a large offset does not cancel away the
  // small variations around it.
  ErrorShape s;
  double sum_e = 0, sum_o = 0;
  int64_t positive = 0;
  auto each = [&](auto&& f) {
    for (int64_t i = 0, n = actual.numel(); i < n; ++i) {
      double a = actual.at(i), o = oracle.at(i);
      if (std::isfinite(a) && std::isfinite(o) && a != o) f(a - o, o);
    }
  };
  each([&](double e, double o) {
    ++s.elements, sum_e += e, sum_o += o;
    positive += e > 0;
  });
  if (s.elements == 0) return s;
  double n = double(s.elements);
  s.mean = sum_e / n;
  double mean_o = sum_o / n, var_e = 0, var_o = 0, cov = 0;
  each([&](double e, double o) {
    double de = e - s.mean, dof = o - mean_o;
    var_e += de * de, var_o += dof * dof, cov += de * dof;
  });
  var_e /= n;
  var_o /= n;
  cov /= n;
  double mean_square = var_e + s.mean * s.mean;
  s.rms = std::sqrt(mean_square);
  s.offset_share = mean_square > 0 ? s.mean * s.mean / mean_square : 0;
  double correlation_sq = var_e > 0 && var_o > 0 ? std::min(1.0, cov * cov / (var_e * var_o)) : 0;
  s.factor = var_o > 0 ? cov / var_o : 0;
  s.explained = s.offset_share + (1 - s.offset_share) * correlation_sq;
  s.same_sign_share = double(std::max(positive, s.elements - positive)) / n;
  return s;
}

}  // namespace cudal1

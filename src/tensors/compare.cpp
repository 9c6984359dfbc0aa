#include "tensors/compare.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace cudal1 {

Tolerance tolerance_for(DType dtype, ToleranceMode mode) {
  if (!dtype_is_float(dtype)) return {0.0, 0.0};
  if (mode == ToleranceMode::standard) return {1e-2, 1e-2};
  switch (dtype) {
    case DType::f64: return {1e-5, 1e-5};
    case DType::f32: return {1e-4, 1e-4};
    case DType::f16: return {1e-3, 1e-3};
    default: return {1e-2, 1e-2};
  }
}

Tolerance tolerance_for(DType dtype, double atol_rtol) {
  if (!dtype_is_float(dtype)) return {0.0, 0.0};
  return {atol_rtol, atol_rtol};
}

const char* tolerance_mode_name(ToleranceMode mode) {
  return mode == ToleranceMode::strict ? "strict" : "standard";
}

bool is_poison_pattern(const TensorValue& v, int64_t i) {
  std::size_t sz = dtype_size(v.dtype);
  if (sz < 2) return false;
  const uint8_t* p = v.bytes.data() + i * sz;
  bool all_fe = true, all_ff = true;
  for (std::size_t b = 0; b < sz; ++b) {
    all_fe &= p[b] == 0xFE;
    all_ff &= p[b] == 0xFF;
  }
  return all_fe || all_ff;
}

Comparison compare_values(const TensorValue& expected, const TensorValue& actual, Tolerance tol) {
  Comparison c;
  c.same_shape = expected.shape == actual.shape;
  c.same_dtype = expected.dtype == actual.dtype && actual.dtype != DType::unknown;
  if (!c.same_shape || !c.same_dtype) return c;
  c.elements = expected.numel();
  double worst_score = -1;
  for (int64_t i = 0; i < c.elements; ++i) {
    double e = expected.at(i), a = actual.at(i);
    bool bad = element_outside(e, a, tol);
    double abs_err = 0, rel_err = 0;
    if (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) {
      if (bad) ++c.nan_mismatches;
    } else {
      abs_err = std::fabs(a - e);
      rel_err = e != 0 ? abs_err / std::fabs(e) : 0.0;  // relative error is undefined at 0
    }
    if (bad) {
      ++c.mismatches;
      if (is_poison_pattern(actual, i) && !is_poison_pattern(expected, i)) ++c.poison_hits;
    }
    if (bad) {
      double score = (std::isnan(e) || std::isnan(a) || std::isinf(e) || std::isinf(a)) ? INFINITY : abs_err;
      if (c.worst_index < 0 || score > worst_score) {
        worst_score = score;
        c.worst_index = i;
        c.worst_expected = e;
        c.worst_actual = a;
      }
    }
    c.max_abs_error = std::max(c.max_abs_error, abs_err);
    c.max_rel_error = std::max(c.max_rel_error, rel_err);
  }
  c.passed = c.mismatches == 0;
  return c;
}

bool all_within(const TensorValue& expected, const TensorValue& actual, Tolerance tol) {
  if (expected.shape != actual.shape || expected.dtype != actual.dtype || actual.dtype == DType::unknown) return false;
  for (int64_t i = 0, n = expected.numel(); i < n; ++i)
    if (element_outside(expected.at(i), actual.at(i), tol)) return false;
  return true;
}

bool all_within(const TensorValue& expected, double value, Tolerance tol) {
  for (int64_t i = 0, n = expected.numel(); i < n; ++i)
    if (element_outside(expected.at(i), value, tol)) return false;
  return true;
}

std::string Comparison::summary() const {
  std::ostringstream s;
  if (!same_shape || !same_dtype) return "shape or dtype differs";
  s.precision(4);
  if (passed) {
    s << "all " << elements << " elements within tolerance (max abs error " << max_abs_error
      << ", max rel error " << max_rel_error << ")";
  } else {
    s << mismatches << " of " << elements << " elements outside tolerance; max abs error "
      << max_abs_error << ", max rel error " << max_rel_error;
    if (worst_index >= 0)
      s << "; e.g. element " << worst_index << ": expected " << worst_expected << ", got "
        << worst_actual;
    if (nan_mismatches) s << "; " << nan_mismatches << " NaN/Inf placements differ";
    if (poison_hits) s << "; " << poison_hits << " elements were never written (poison pattern)";
  }
  return s.str();
}

}  // namespace cudal1

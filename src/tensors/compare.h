// tensors/compare.h — the numeric check, done by trusted code on values read from files.
//
// An element passes when |actual - expected| <= atol + rtol * |expected|, NaN sits where the
// expected NaN sits and infinities match exactly. Tolerances depend on the expected dtype.
#pragma once

#include <cmath>
#include <string>

#include "tensors/tensor_file.h"

namespace cudal1 {

struct Tolerance {
  double atol = 1e-2, rtol = 1e-2;
};

enum class ToleranceMode { standard, strict };

// standard: atol = rtol = 1e-2 for every float dtype (KernelBench's and CUDA-L1's setting).
// strict: 1e-5 for float64, 1e-4 for float32, 1e-3 for float16, 1e-2 for bfloat16.
// Integer and bool outputs must match exactly in both modes.
Tolerance tolerance_for(DType dtype, ToleranceMode mode);
// One number as atol and rtol of every float dtype (a lint run at 1e-4, say); integer and bool
// outputs still match exactly.
Tolerance tolerance_for(DType dtype, double atol_rtol);
const char* tolerance_mode_name(ToleranceMode mode);

struct Comparison {
  bool same_shape = true, same_dtype = true;
  bool passed = false;
  int64_t elements = 0;
  int64_t mismatches = 0;       // elements outside tolerance (NaN/Inf placement included)
  int64_t nan_mismatches = 0;   // NaN or Inf where the other side has none, or of other sign
  int64_t poison_hits = 0;      // elements still holding an allocator poison pattern
  double max_abs_error = 0, max_rel_error = 0;
  int64_t worst_index = -1;
  double worst_expected = 0, worst_actual = 0;
  std::string summary() const;  // one line for a person
};

Comparison compare_values(const TensorValue& expected, const TensorValue& actual, Tolerance tol);

// The element rule every comparison shares: true when `a` is outside tolerance of `e`.
inline bool element_outside(double e, double a, Tolerance tol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) != std::isnan(a);
  if (std::isinf(e) || std::isinf(a)) return e != a;
  return std::fabs(a - e) > tol.atol + tol.rtol * std::fabs(e);
}

// Quick screens that stop at the first element outside tolerance: whether compare_values would
// pass, without its details. Against another tensor (same shape and dtype required), or against
// one value held by every element.
bool all_within(const TensorValue& expected, const TensorValue& actual, Tolerance tol);
bool all_within(const TensorValue& expected, double value, Tolerance tol);

// True when an element's raw bytes are one of the fill patterns used to poison fresh
// allocations (0xFE bytes from glibc, or an all-ones NaN) while the expected value is not.
bool is_poison_pattern(const TensorValue& v, int64_t i);

}  // namespace cudal1

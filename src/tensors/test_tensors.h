// tensors/test_tensors.h — small host tensors built from literals, for the evaluator's unit tests.
#pragma once

#include <cstring>
#include <vector>

#include "tensors/tensor_file.h"

namespace cudal1::test {

// A tensor of `values` as `dtype` (whose C++ element type is T); shape: one dimension when empty.
template <typename T>
TensorValue tensor_of(const std::vector<T>& values, DType dtype, const char* dtype_text, std::vector<int64_t> shape = {}) {
  TensorValue t;
  t.dtype = dtype;
  t.dtype_text = dtype_text;
  t.shape = shape.empty() ? std::vector<int64_t>{int64_t(values.size())} : shape;
  t.bytes.resize(values.size() * sizeof(T));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline TensorValue f32(std::vector<float> v, std::vector<int64_t> shape = {}) {
  return tensor_of(v, DType::f32, "float32", shape);
}
inline TensorValue f64(std::vector<double> v, std::vector<int64_t> shape = {}) {
  return tensor_of(v, DType::f64, "float64", shape);
}

}  // namespace cudal1::test

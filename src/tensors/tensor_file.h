// tensors/tensor_file.h — reads the tensor files the Python workers write (format in
// src/runner/py/tensor_io.py): the values a trusted comparison works on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cudal1 {

enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean, unknown };

DType dtype_from_name(const std::string& name);
const char* dtype_name(DType d);
std::size_t dtype_size(DType d);
bool dtype_is_float(DType d);

struct TensorValue {
  bool is_tensor = true;
  std::string other_type;        // Python type name when !is_tensor
  DType dtype = DType::unknown;
  std::string dtype_text;        // as written, so an unknown dtype can still be reported
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;    // C order, little endian

  int64_t numel() const;
  double at(int64_t i) const;    // element i as double (floats, ints and bools)
  std::string shape_text() const;  // "(64, 128)"
};

// Reads every value in the file. Refuses files larger than max_bytes (a hostile worker could
// write anything) and malformed ones, with Error(runner) describing the problem.
std::vector<TensorValue> read_tensor_file(const std::filesystem::path& path,
                                          std::size_t max_bytes = std::size_t(1) << 34);

}  // namespace cudal1

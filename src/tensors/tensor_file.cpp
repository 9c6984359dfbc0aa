#include "tensors/tensor_file.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace cudal1 {

namespace {

struct DTypeInfo {
  DType d;
  const char* name;
  std::size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::f64, "float64", 8}, {DType::f32, "float32", 4}, {DType::f16, "float16", 2},
    {DType::bf16, "bfloat16", 2}, {DType::i64, "int64", 8}, {DType::i32, "int32", 4},
    {DType::i16, "int16", 2}, {DType::i8, "int8", 1}, {DType::u8, "uint8", 1},
    {DType::boolean, "bool", 1},
};

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

[[noreturn]] void bad_file(const std::filesystem::path& path, const std::string& why) {
  throw Error(ErrorKind::runner, "malformed tensor file " + path.string() + ": " + why);
}

}  // namespace

DType dtype_from_name(const std::string& name) {
  for (auto& i : kDTypes)
    if (name == i.name) return i.d;
  return DType::unknown;
}

const char* dtype_name(DType d) {
  for (auto& i : kDTypes)
    if (d == i.d) return i.name;
  return "unknown";
}

std::size_t dtype_size(DType d) {
  for (auto& i : kDTypes)
    if (d == i.d) return i.size;
  return 0;
}

bool dtype_is_float(DType d) {
  return d == DType::f64 || d == DType::f32 || d == DType::f16 || d == DType::bf16;
}

int64_t TensorValue::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

double TensorValue::at(int64_t i) const {
  const uint8_t* p = bytes.data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::f64: return load<double>(p);
    case DType::f32: return load<float>(p);
    case DType::f16: return half_to_float(load<uint16_t>(p));
    case DType::bf16: {
      uint32_t bits = uint32_t(load<uint16_t>(p)) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::i64: return double(load<int64_t>(p));
    case DType::i32: return load<int32_t>(p);
    case DType::i16: return load<int16_t>(p);
    case DType::i8: return load<int8_t>(p);
    case DType::u8: return *p;
    case DType::boolean: return *p ? 1.0 : 0.0;
    case DType::unknown: break;
  }
  return 0.0;
}

std::string TensorValue::shape_text() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::vector<TensorValue> read_tensor_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) bad_file(path, "cannot stat: " + ec.message());
  if (size > max_bytes) bad_file(path, "it is " + std::to_string(size) + " bytes, over the limit");
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!std::getline(in, line) || line != "CUDAL1T1") bad_file(path, "missing magic line");
  std::vector<TensorValue> values;
  while (std::getline(in, line)) {
    nlohmann::json h;
    try {
      h = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      bad_file(path, "bad header line");
    }
    TensorValue v;
    if (h.value("kind", "") == "other") {
      v.is_tensor = false;
      v.other_type = h.value("type", "?");
      values.push_back(std::move(v));
      continue;
    }
    v.dtype_text = h.value("dtype", "");
    v.dtype = dtype_from_name(v.dtype_text);
    for (auto& s : h.at("shape")) v.shape.push_back(s.get<int64_t>());
    auto nbytes = h.at("nbytes").get<uint64_t>();
    if (nbytes > size) bad_file(path, "a header claims more bytes than the file has");
    if (v.dtype != DType::unknown && nbytes != uint64_t(v.numel()) * dtype_size(v.dtype))
      bad_file(path, "byte count does not match shape and dtype");
    v.bytes.resize(nbytes);
    if (!in.read(reinterpret_cast<char*>(v.bytes.data()), static_cast<std::streamsize>(nbytes)))
      bad_file(path, "truncated tensor data");
    values.push_back(std::move(v));
  }
  return values;
}

}  // namespace cudal1

// trainer/safetensors.cpp — memory-mapped safetensors reader and writer (see safetensors.h).
#include "trainer/safetensors.h"

#include "core/error.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

namespace cudal1::trainer {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatHint =
    "the file is not a valid .safetensors file (truncated download or copy?); fetch or write it again";

struct DtypeInfo {
  const char* name;
  torch::Dtype dtype;
  size_t size;
};

const DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
    {"F64", torch::kFloat64, 8}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

[[noreturn]] void bad_file(const fs::path& path, const std::string& what, const std::string& hint = kFormatHint) {
  throw Error(ErrorKind::input, "bad safetensors file: " + what, hint, path.string());
}

}  // namespace

struct SafetensorsFile::Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base != nullptr && base != MAP_FAILED) munmap(base, size);
  }
};

std::string safetensors_dtype_name(torch::Dtype dtype) {
  for (const auto& d : kDtypes)
    if (d.dtype == dtype) return d.name;
  throw Error(ErrorKind::input, std::string("dtype ") + c10::toString(dtype) + " cannot be written to safetensors",
              "convert the tensor to one of F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL first");
}

torch::Dtype safetensors_dtype(const std::string& name) {
  if (const DtypeInfo* d = find_dtype(name)) return d->dtype;
  throw Error(ErrorKind::input, "unknown safetensors dtype \"" + name + "\"",
              "supported: F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL");
}

SafetensorsFile SafetensorsFile::open(const fs::path& path) {
  SafetensorsFile file;
  file.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::input, std::string("cannot open safetensors file: ") + std::strerror(errno),
                "check the path and its permissions", path.string());
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw Error(ErrorKind::input, std::string("cannot stat safetensors file: ") + std::strerror(err), {}, path.string());
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size < 8) {
    ::close(fd);
    bad_file(path, "truncated: " + std::to_string(mapping->size) + " bytes, less than the 8-byte header length");
  }
  // Private and writable: a tensor viewing the mapping may be modified in place by torch code
  // without faulting, and the change never reaches the file (copy on write).
  mapping->base = mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (mapping->base == MAP_FAILED)
    throw Error(ErrorKind::input, std::string("cannot map safetensors file: ") + std::strerror(map_errno), {},
                path.string());
  file.mapping_ = mapping;

  const auto* bytes = static_cast<const unsigned char*>(mapping->base);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > mapping->size - 8)
    bad_file(path, "truncated: header length " + std::to_string(header_len) + " exceeds the " +
                       std::to_string(mapping->size - 8) + " bytes that follow it");
  file.data_offset_ = 8 + header_len;
  const uint64_t data_size = mapping->size - file.data_offset_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(bytes + 8),
                                   reinterpret_cast<const char*>(bytes + 8 + header_len));
  } catch (const nlohmann::json::exception& e) {
    bad_file(path, std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) bad_file(path, "header is not a JSON object");

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) bad_file(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) bad_file(path, "__metadata__ value \"" + m.key() + "\" is not a string");
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
        !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      bad_file(path, "entry \"" + name + "\" lacks a string dtype, a shape array or two data_offsets");
    SafetensorsEntry e;
    e.dtype = v["dtype"].get<std::string>();
    const DtypeInfo* d = find_dtype(e.dtype);
    if (d == nullptr)
      bad_file(path, "tensor \"" + name + "\" has unknown dtype \"" + e.dtype + "\"",
               "supported: F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL; convert the checkpoint");
    uint64_t numel = 1;
    for (const auto& s : v["shape"]) {
      if (!s.is_number_unsigned()) bad_file(path, "tensor \"" + name + "\" has a shape entry that is not a count");
      uint64_t n = s.get<uint64_t>();
      if (n != 0 && numel > std::numeric_limits<uint64_t>::max() / n / 8)
        bad_file(path, "tensor \"" + name + "\" has an absurd shape");
      numel *= n;
      e.shape.push_back(static_cast<int64_t>(n));
    }
    for (const auto& o : v["data_offsets"])
      if (!o.is_number_unsigned()) bad_file(path, "tensor \"" + name + "\" has data_offsets that are not byte counts");
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size)
      bad_file(path, "tensor \"" + name + "\" has bad data_offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + "] for a data section of " + std::to_string(data_size) +
                         " bytes (truncated?)");
    if (e.end - e.begin != numel * d->size)
      bad_file(path, "tensor \"" + name + "\" occupies " + std::to_string(e.end - e.begin) + " bytes but its " +
                         e.dtype + " shape needs " + std::to_string(numel * d->size));
    ranges.emplace_back(e.begin, e.end);
    file.entries_.emplace(name, std::move(e));
  }
  // Like the reference implementation: the byte ranges must tile the data section exactly, so no
  // two tensors share bytes and nothing hides between them.
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto& [b, e] : ranges) {
    if (b != at)
      bad_file(path, "tensor byte ranges overlap or leave a gap at offset " + std::to_string(std::min(b, at)));
    at = e;
  }
  if (at != data_size)
    bad_file(path, "data section has " + std::to_string(data_size) + " bytes but the tensors cover " +
                       std::to_string(at));
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

torch::Tensor SafetensorsFile::get(const std::string& name, bool copy) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw Error(ErrorKind::input, "tensor \"" + name + "\" is not in the safetensors file",
                "the checkpoint does not match the model it is loaded into", path_.string());
  const SafetensorsEntry& e = it->second;
  const torch::Dtype dtype = safetensors_dtype(e.dtype);
  auto options = torch::TensorOptions().dtype(dtype).device(torch::kCPU);
  if (e.begin == e.end) return torch::empty(e.shape, options);
  char* data = static_cast<char*>(mapping_->base) + data_offset_ + e.begin;
  const size_t elem = find_dtype(e.dtype)->size;
  if (reinterpret_cast<uintptr_t>(data) % elem != 0) {
    // Misaligned for its element type (allowed by the format): never hand torch such a pointer.
    auto t = torch::empty(e.shape, options);
    std::memcpy(t.data_ptr(), data, e.end - e.begin);
    return t;
  }
  std::shared_ptr<Mapping> keep = mapping_;
  auto view = torch::from_blob(data, e.shape, [keep](void*) mutable { keep.reset(); }, options);
  return copy ? view.clone() : view;
}

std::map<std::string, torch::Tensor> SafetensorsFile::all(bool copy) const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, e] : entries_) out.emplace(name, get(name, copy));
  return out;
}

void save_safetensors(const fs::path& path, const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> cpu;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {  // std::map: sorted keys
    if (name == "__metadata__")
      throw Error(ErrorKind::input, "a tensor cannot be named __metadata__", {}, path.string());
    if (!t.defined())
      throw Error(ErrorKind::internal, "tensor \"" + name + "\" is undefined", {}, path.string());
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * c.element_size();
    std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
    header[name] = {{"dtype", safetensors_dtype_name(c.scalar_type())},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(c));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  fs::path tmp = path;
  tmp += ".tmp";
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::input, "cannot write safetensors file", "check the folder exists and is writable", tmp.string());
    unsigned char len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& c : cpu)
      out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * c.element_size()));
    out.flush();
    if (!out) throw Error(ErrorKind::input, "short write to safetensors file", "is the disk full?", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw Error(ErrorKind::input, "cannot rename " + tmp.string() + ": " + ec.message(), {}, path.string());
}

}  // namespace cudal1::trainer

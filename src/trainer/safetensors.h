// trainer/safetensors.h — reading and writing .safetensors files (Hugging Face's weight format).
//
// A file is: 8 bytes little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}},
// then the raw row-major tensor bytes, offsets relative to the end of the header. Files are read
// memory-mapped, so opening a 15 GB checkpoint costs nothing until a tensor is touched, and a tensor
// can be copied straight from the mapping to its device and dtype.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cudal1::trainer {

// One tensor's entry in the header.
struct SafetensorsEntry {
  std::string dtype;            // "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

class SafetensorsFile {
 public:
  // Maps the file and validates its header: every entry's dtype is known, its byte range matches
  // its shape and lies inside the file, and the ranges tile the data section without overlap.
  // Throws Error(input) naming the file and the problem.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }

  // The tensor as stored (CPU, its file dtype). Without `copy` it is a view of the mapping, which
  // it keeps alive; the mapping is private copy-on-write, so writing to it never touches the file.
  // Throws Error(input) when the name is absent.
  torch::Tensor get(const std::string& name, bool copy = false) const;
  std::map<std::string, torch::Tensor> all(bool copy = false) const;

 private:
  struct Mapping;
  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_offset_ = 0;  // 8 + header length
};

// Writes `tensors` (any device, dtype among the supported ones, any layout: each is written as a
// contiguous CPU copy) with `metadata` under "__metadata__". Keys are sorted, data follows in key
// order, the header is padded with spaces to a multiple of 8 so every tensor starts 8-aligned.
// Written to a temporary file and renamed, so a reader never sees half a file.
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The safetensors dtype name of a torch dtype and back; throw Error(input) for unsupported ones.
std::string safetensors_dtype_name(torch::Dtype dtype);
torch::Dtype safetensors_dtype(const std::string& name);

}  // namespace cudal1::trainer

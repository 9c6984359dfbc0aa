// tasks/cuda_l1.h — CUDA-L1's released JSON-lines files: one row per task, with the reference
// program (ref_code), CUDA-L1's kernel (custom_code) and its variants, and the claimed speedups.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace cudal1 {

struct CudaL1Row {
  std::string name;             // "level1/task37"; for a broken line, "FILE:LINE"
  int line = 0;
  int level = 0, task = 0;
  nlohmann::json fields;        // the whole row
  std::optional<Error> error;   // the line is not a CUDA-L1 row

  std::string text(const char* field) const;  // a string field, empty when absent or null
};

// Every non-blank line of `file`; a line that does not parse carries its error rather than
// ending the read. Throws Error(input) when the file cannot be read.
std::vector<CudaL1Row> read_cuda_l1(const std::string& file);

// Writes `code` to dir/level{L}/task{T}/{file_name} and returns that path; two rows of one task
// get distinct folders (task{T}_line{N}).
std::filesystem::path write_row_file(const CudaL1Row& row, const std::filesystem::path& dir,
                                     const std::string& file_name, const std::string& code);

}  // namespace cudal1

#include "tasks/cuda_l1.h"

#include <fstream>

namespace fs = std::filesystem;

namespace cudal1 {

std::string CudaL1Row::text(const char* field) const {
  auto it = fields.find(field);
  return it != fields.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<CudaL1Row> read_cuda_l1(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::input, "cannot read " + file, "check the path of the CUDA-L1 JSON-lines file");
  std::vector<CudaL1Row> rows;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    CudaL1Row r;
    r.line = n;
    r.name = file + ":" + std::to_string(n);
    try {
      r.fields = nlohmann::json::parse(line);
      r.level = r.fields.at("level_id").get<int>();
      r.task = r.fields.at("task_id").get<int>();
      r.fields.at("ref_code").get<std::string>();
      r.name = "level" + std::to_string(r.level) + "/task" + std::to_string(r.task);
    } catch (const nlohmann::json::exception& e) {
      r.error = Error(ErrorKind::input, r.name + ": not a CUDA-L1 row: " + e.what(),
                      "each line needs level_id, task_id and ref_code");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// The folder remembers which line it belongs to, so a second row of the same task (another
// line) does not overwrite the first one's files.
fs::path write_row_file(const CudaL1Row& row, const fs::path& dir, const std::string& file_name,
                        const std::string& code) {
  fs::path level = dir / ("level" + std::to_string(row.level));
  fs::path folder = level / ("task" + std::to_string(row.task));
  int owner = 0;
  if (std::ifstream f(folder / ".line"); f) f >> owner;
  if (owner != 0 && owner != row.line)
    folder = level / ("task" + std::to_string(row.task) + "_line" + std::to_string(row.line));
  fs::create_directories(folder);
  std::ofstream(folder / ".line") << row.line;
  fs::path p = folder / file_name;
  std::ofstream(p) << code;
  if (!std::ofstream(p, std::ios::app))
    throw Error(ErrorKind::input, "cannot write " + p.string(), "check that the work folder is writable");
  return p;
}

}  // namespace cudal1

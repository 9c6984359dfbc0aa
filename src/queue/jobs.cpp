#include "queue/jobs.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "queue/kernelbench_run.h"
#include "tasks/cuda_l1.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

std::vector<QueueJob> jobs_from_pairs(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::input, "cannot read " + file, "check the path of --pairs");
  std::vector<QueueJob> jobs;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    QueueJob j;
    if (line[0] == '{') {
      json row = json::parse(line, nullptr, false);
      if (row.is_discarded() || !row.contains("task") || !row.contains("candidate"))
        throw Error(ErrorKind::input, file + ":" + std::to_string(n) + ": not a {\"task\", \"candidate\"} object",
                    "write one JSON object per line with task and candidate paths");
      j.options.task_path = row["task"];
      j.options.candidate_path = row["candidate"];
      j.id = row.value("id", j.options.candidate_path);
    } else {
      std::istringstream s(line);
      if (!(s >> j.options.task_path >> j.options.candidate_path))
        throw Error(ErrorKind::input, file + ":" + std::to_string(n) + ": expected TASK CANDIDATE",
                    "write a task (a path or a suite name) and a candidate path per line");
      j.id = j.options.candidate_path;
    }
    try {  // a suite name serves as well as a path, as on every command
      j.options.task_path = resolve_task_file(j.options.task_path);
    } catch (const Error& e) {
      throw Error(e.kind(), file + ":" + std::to_string(n) + ": " + e.message(), e.hint(), e.context());
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

bool level_selected(const std::string& levels, int level) {
  return levels.empty() || levels.find(std::to_string(level)) != std::string::npos;
}

std::vector<QueueJob> jobs_from_cuda_l1(const std::string& jsonl, const std::string& levels, const fs::path& work) {
  // CUDA-L1's own measurements, by the names cudal1 gives its baselines.
  static const std::pair<const char*, const char*> kClaims[] = {
      {"score_default", "eager"},
      {"score_torch_compile_default", "compile"},
      {"score_torch_compile_reduce_overhead", "compile_ro"},
      {"score_cuda_graph", "cuda_graph"},
      {"score_cudnn", "cudnn_autotune"}};
  std::vector<QueueJob> jobs;
  for (auto& row : read_cuda_l1(jsonl)) {
    if (row.error || row.text("custom_code").empty()) continue;
    if (!level_selected(levels, row.level)) continue;
    QueueJob j;
    j.id = row.name;
    j.options.task_path = write_row_file(row, work, "task.py", row.text("ref_code")).string();
    j.options.candidate_path = write_row_file(row, work, "candidate.py", row.text("custom_code")).string();
    json claimed = json::object();
    for (auto& [field, name] : kClaims)
      if (row.fields.contains(field) && row.fields[field].is_number()) claimed[name] = row.fields[field];
    j.meta = {{"level", row.level}, {"claimed", claimed}};
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<QueueJob> jobs_from_folder(const fs::path& dir, const fs::path& suite, int kernelbench_sample) {
  if (!fs::is_directory(dir)) throw Error(ErrorKind::input, "no folder " + dir.string(), "check the path of --folder");
  if (is_kernelbench_run(dir)) return jobs_from_kernelbench_run(dir, suite, kernelbench_sample);
  std::vector<QueueJob> jobs;
  for (auto& t : discover_tasks(suite)) {
    fs::path cand = dir / (t.name + ".py");
    if (!fs::exists(cand)) continue;
    QueueJob j;
    j.id = t.name;
    j.options.task_path = t.path.string();
    j.options.candidate_path = cand.string();
    j.meta = {{"level", t.level}};
    jobs.push_back(std::move(j));
  }
  if (jobs.empty())
    throw Error(ErrorKind::input, "no file in " + dir.string() + " is named after a task of " + suite.string(),
                "name each candidate after its task (DIR/level1/01_matmul_square.py for level1/01_matmul_square.py), "
                "or name a KernelBench run folder (level_1_problem_1_sample_0_kernel.py)");
  return jobs;
}

}  // namespace cudal1

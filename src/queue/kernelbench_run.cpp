#include "queue/kernelbench_run.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "core/error.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += " and " + std::to_string(names.size() - 5) + " more";
  return out;
}

}  // namespace

std::optional<KernelBenchKernelName> parse_kernelbench_kernel_name(const std::string& file_name) {
  static const std::regex pattern(R"(level_(\d{1,3})_problem_(\d{1,6})_sample_(\d{1,6})_kernel\.py)");
  std::smatch m;
  if (!std::regex_match(file_name, m, pattern)) return std::nullopt;
  return KernelBenchKernelName{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
}

bool is_kernelbench_run(const fs::path& dir) {
  std::error_code ec;
  for (auto& f : fs::directory_iterator(dir, ec))
    if (f.is_regular_file() && parse_kernelbench_kernel_name(f.path().filename().string())) return true;
  return false;
}

std::vector<QueueJob> jobs_from_kernelbench_run(const fs::path& dir, const fs::path& suite, int sample) {
  const std::string suite_hint = "point --suite at the tasks the run was generated from (a KernelBench checkout's "
                                 "KernelBench/ folder, with level1/, level2/, level3/)";
  std::map<std::pair<int, int>, std::vector<TaskEntry>> tasks;  // (level, problem) -> tasks
  for (auto& t : discover_tasks(suite))
    if (int p = split_task_stem(t.path.stem().string()).number) tasks[{t.level, p}].push_back(t);

  std::map<std::string, QueueJob> by_task;  // in task order
  std::vector<std::string> unmatched, ambiguous;
  std::set<int> samples;
  for (auto& f : fs::directory_iterator(dir)) {
    auto name = parse_kernelbench_kernel_name(f.path().filename().string());
    if (!name || !f.is_regular_file()) continue;
    samples.insert(name->sample);
    if (name->sample != sample) continue;
    auto it = tasks.find({name->level, name->problem});
    if (it == tasks.end()) {
      unmatched.push_back(f.path().filename().string());
      continue;
    }
    if (it->second.size() > 1) {
      ambiguous.push_back(f.path().filename().string() + " (" + it->second[0].name + ", " + it->second[1].name + ")");
      continue;
    }
    const TaskEntry& t = it->second.front();
    QueueJob j;
    j.id = t.name;
    j.options.task_path = t.path.string();
    j.options.candidate_path = f.path().string();
    j.meta = {{"level", t.level}, {"sample", sample}, {"problem", name->problem}};
    by_task[t.name] = std::move(j);
  }
  std::sort(unmatched.begin(), unmatched.end());
  if (!unmatched.empty())
    throw Error(ErrorKind::input, std::to_string(unmatched.size()) + " kernels in " + dir.string() + " are of no task of " +
                                      suite.string() + ": " + listed(unmatched), suite_hint);
  if (!ambiguous.empty())
    throw Error(ErrorKind::input, "two tasks of " + suite.string() + " have the same level and number: " + listed(ambiguous),
                "keep one task per number in each level folder");
  if (by_task.empty()) {
    std::string have;
    for (int s : samples) have += (have.empty() ? "" : ", ") + std::to_string(s);
    throw Error(ErrorKind::input, "no kernel in " + dir.string() + " is of sample " + std::to_string(sample),
                "pass --sample with one the run has: " + have);
  }
  std::vector<QueueJob> jobs;
  for (auto& [name, j] : by_task) jobs.push_back(std::move(j));
  return jobs;
}

}  // namespace cudal1

// tasks/task_texts.h — a task's reference text found by the hash the store keys it by (the sha256
// of the file), for code that has only the store's (task id, task hash) and must show the task
// again as it was judged: files named by the user first, else the suite's task of that id.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cudal1 {

class TaskTexts {
 public:
  // `named`: task files or suite names (found in `suite` as find_task finds them), read now.
  TaskTexts(std::filesystem::path suite, const std::vector<std::string>& named);

  // The text whose sha256 is `task_hash`: a named file's, else the suite's task `task_id` when its
  // hash matches. Throws Error(input) saying which it was not and what to pass (`what_to_pass`).
  const std::string& text(const std::string& task_id, const std::string& task_hash, const std::string& what_to_pass);

 private:
  std::filesystem::path suite_;
  std::map<std::string, std::string> by_hash_;
};

}  // namespace cudal1

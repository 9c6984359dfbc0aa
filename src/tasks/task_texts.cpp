#include "tasks/task_texts.h"

#include "core/error.h"
#include "core/hash.h"
#include "tasks/suite.h"

namespace cudal1 {

TaskTexts::TaskTexts(std::filesystem::path suite, const std::vector<std::string>& named) : suite_(std::move(suite)) {
  for (auto& name : named) {
    std::string text = read_file(find_task(suite_, name).path);
    by_hash_.emplace(sha256_hex(text), std::move(text));
  }
}

const std::string& TaskTexts::text(const std::string& task_id, const std::string& task_hash, const std::string& what_to_pass) {
  if (auto it = by_hash_.find(task_hash); it != by_hash_.end()) return it->second;
  std::string text;
  try {
    text = read_file(find_task(suite_, task_id).path);
  } catch (const Error&) {
    throw Error(ErrorKind::input, "task " + task_id + " is neither among the files named nor in " + suite_.string(), what_to_pass);
  }
  if (sha256_hex(text) != task_hash)
    throw Error(ErrorKind::input, "task " + task_id + " in " + suite_.string() + " is not the file it was judged against (its hash differs)",
                what_to_pass);
  return by_hash_.emplace(task_hash, std::move(text)).first->second;
}

}  // namespace cudal1

#include "rl/sft_dataset.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/hash.h"

namespace fs = std::filesystem;

namespace cudal1::rl {

std::vector<SftExample> select_sft_examples(Store& store, const SftSelection& sel) {
  // (task order, source) -> the accepted answers, each file once (its fastest verdict).
  std::map<std::string, std::size_t> task_order;
  std::map<std::pair<std::size_t, std::string>, std::map<std::string, SftExample>> groups;
  for (auto& x : store.run_samples(sel.run)) {
    if (!x.accepted || !x.speedup || x.candidate_hash.empty()) continue;
    std::size_t order = task_order.emplace(x.task_hash, task_order.size()).first->second;
    auto& files = groups[{order, x.policy}];
    auto it = files.find(x.candidate_hash);
    if (it != files.end() && it->second.speedup >= *x.speedup) continue;
    files[x.candidate_hash] = {x.task_id, x.task_hash, x.policy, x.candidate_hash, *x.speedup, x.prompt, x.completion};
  }
  std::vector<SftExample> out;
  for (auto& [key, files] : groups) {
    std::vector<SftExample> ranked;
    for (auto& [hash, e] : files) ranked.push_back(e);
    std::stable_sort(ranked.begin(), ranked.end(), [](const SftExample& a, const SftExample& b) { return a.speedup > b.speedup; });
    if (ranked.size() > sel.per_task_and_source) ranked.resize(sel.per_task_and_source);
    out.insert(out.end(), ranked.begin(), ranked.end());
  }
  return out;
}

std::size_t write_sft_jsonl(const std::vector<SftExample>& examples, const fs::path& file) {
  std::string text;
  for (auto& e : examples)
    text += nlohmann::json{{"task", e.task_id}, {"task_hash", e.task_hash}, {"source", e.source},
                           {"candidate_hash", e.candidate_hash}, {"speedup", e.speedup},
                           {"prompt", e.prompt}, {"completion", e.completion}}.dump() + "\n";
  fs::path tmp = file;
  tmp += ".tmp";
  write_file(tmp, text, "check that the output folder exists and is writable");
  fs::rename(tmp, file);
  return examples.size();
}

}  // namespace cudal1::rl

#include "rl/sft_dataset.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "policy/response.h"

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

std::vector<SftExample> contrastive_copies(Store& store, const SftSelection& sel, const std::vector<SftExample>& answers,
                                           const ContrastiveCopies& c) {
  std::vector<SftExample> out;
  if (c.copies <= 0) return out;
  if (!c.reference)
    throw Error(ErrorKind::internal, "contrastive copies were asked for without a way to read the tasks' references",
                "set ContrastiveCopies::reference (`cudal1 train sft` finds them with --task and --suite)");
  // task hash -> file hash -> (fastest accepted speedup, the file as the loop shows it).
  std::map<std::string, std::map<std::string, std::pair<double, std::string>>> files;
  for (auto& x : store.run_samples(sel.run)) {
    if (!x.accepted || !x.speedup || x.candidate_hash.empty()) continue;
    auto [it, fresh] = files[x.task_hash].try_emplace(x.candidate_hash, *x.speedup, std::string());
    if (fresh) it->second.second = policy::parse_response(x.completion).code;
    it->second.first = std::max(it->second.first, *x.speedup);
  }
  for (const SftExample& e : answers) {
    auto task_files = files.find(e.task_hash);
    if (task_files == files.end()) continue;
    // Stage 3's sampler favours the fastest files, so its prompts mostly show the task's fastest:
    // that file's copies draw from every file, itself included (nothing known beats it, so the
    // answer to a prompt showing it is itself again); any other answer's only from slower files.
    double fastest = 0;
    for (auto& [hash, f] : task_files->second) fastest = std::max(fastest, f.first);
    const bool is_fastest = e.speedup >= fastest;
    std::vector<Exemplar> slower;  // id: the file's hash
    for (auto& [hash, f] : task_files->second)
      if ((f.first < e.speedup || is_fastest) && !f.second.empty()) slower.push_back({hash, f.first});
    if (slower.empty()) continue;
    const std::string reference = c.reference(e);
    policy::PromptBudget budget = c.budget;
    const std::size_t answer = c.answer_tokens ? c.answer_tokens(e.completion) : 0;
    budget.max_tokens = budget.max_tokens > answer ? budget.max_tokens - answer : 0;
    std::mt19937_64 rng(c.seed ^ std::hash<std::string>{}(e.task_hash + e.candidate_hash));
    std::set<std::vector<std::size_t>> drawn;
    for (int k = 0; k < c.copies; ++k) {
      std::vector<std::size_t> picked = sample_exemplars(slower, c.sampler, rng);
      if (!drawn.insert(picked).second) continue;
      SftExample copy = e;
      std::vector<policy::PromptExemplar> shown;
      copy.shown = nlohmann::json::array();
      for (std::size_t i : picked) {
        shown.push_back({task_files->second.at(slower[i].id).second, slower[i].score});
        copy.shown.push_back({{"candidate_hash", slower[i].id}, {"speedup", slower[i].score}});
      }
      policy::BuiltPrompt prompt = policy::build_prompt(c.templates, {e.task_id, c.device, reference, shown}, budget);
      if (prompt.exemplars_shown < shown.size()) continue;  // over the budget: dropping files would change what it says
      copy.prompt = std::move(prompt.text);
      out.push_back(std::move(copy));
    }
  }
  return out;
}

std::size_t write_sft_jsonl(const std::vector<SftExample>& examples, const fs::path& file) {
  std::string text;
  for (auto& e : examples)
    text += nlohmann::json{{"task", e.task_id}, {"task_hash", e.task_hash}, {"source", e.source},
                           {"candidate_hash", e.candidate_hash}, {"speedup", e.speedup},
                           {"prompt", e.prompt}, {"completion", e.completion}, {"shown", e.shown}}.dump() + "\n";
  fs::path tmp = file;
  tmp += ".tmp";
  write_file(tmp, text, "check that the output folder exists and is writable");
  fs::rename(tmp, file);
  return examples.size();
}

}  // namespace cudal1::rl

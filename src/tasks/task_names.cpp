// tasks/task_names.cpp — the one way every command turns what a person typed into a task file
// (suite.h: find_task, resolve_task_file).
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

// "28_log_softmax" -> "log_softmax": what the task is called without its place in the level.
std::string short_name(const TaskEntry& t) { return split_task_stem(t.name.substr(t.name.find('/') + 1)).rest; }

std::string stem_of(const TaskEntry& t) { return t.name.substr(t.name.find('/') + 1); }

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The names a person most likely meant: nearest by edit distance to the name, its stem or its
// short name, whichever is closest.
std::string closest_names(const std::vector<TaskEntry>& all, const std::string& query, std::size_t count) {
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (auto& t : all)
    ranked.push_back({std::min({edit_distance(query, t.name), edit_distance(query, stem_of(t)),
                                edit_distance(query, short_name(t))}),
                      t.name});
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::string out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i) out += (out.empty() ? "" : ", ") + ranked[i].second;
  return out;
}

std::string listed(const std::vector<TaskEntry>& hits) {
  std::string out;
  for (auto& t : hits) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

// The tasks `query` names, most specific rule first: the full name, the file's stem, the short
// name; only where none of those matches, every task whose name contains it.
std::vector<TaskEntry> matches(const std::vector<TaskEntry>& all, const std::string& query) {
  using Rule = std::string (*)(const TaskEntry&);
  const Rule rules[] = {[](const TaskEntry& t) { return t.name; }, stem_of, short_name};
  for (Rule rule : rules) {
    std::vector<TaskEntry> hits;
    for (auto& t : all)
      if (rule(t) == query) hits.push_back(t);
    if (!hits.empty()) return hits;
  }
  std::vector<TaskEntry> hits;
  for (auto& t : all)
    if (t.name.find(query) != std::string::npos) hits.push_back(t);
  return hits;
}

}  // namespace

TaskStem split_task_stem(const std::string& stem) {
  std::size_t digits = 0;
  while (digits < stem.size() && std::isdigit(static_cast<unsigned char>(stem[digits]))) ++digits;
  if (digits == 0 || digits >= stem.size() || stem[digits] != '_') return {0, stem};
  return {digits <= 9 ? std::stoi(stem.substr(0, digits)) : 0, stem.substr(digits + 1)};
}

TaskEntry find_task(const fs::path& suite, const std::string& name_or_path) {
  if (fs::is_regular_file(name_or_path))
    return {fs::path(name_or_path).stem().string(), 0, fs::path(name_or_path)};
  std::string query = name_or_path;
  if (query.size() > 3 && query.compare(query.size() - 3, 3, ".py") == 0) query.resize(query.size() - 3);
  const std::string hint = "give a task file's path, or a name from `cudal1 tasks list`: level1/28_log_softmax, "
                           "28_log_softmax or log_softmax";
  if (query.empty()) throw Error(ErrorKind::input, "no task named", hint);
  std::vector<TaskEntry> all = discover_tasks(suite);
  std::vector<TaskEntry> hits = matches(all, query);
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1)
    throw Error(ErrorKind::input, "'" + name_or_path + "' names " + std::to_string(hits.size()) + " tasks: " + listed(hits),
                "give one of them in full", "suite " + suite.string());
  bool looks_like_a_path = name_or_path.find('/') != std::string::npos && name_or_path.rfind("level", 0) != 0;
  throw Error(ErrorKind::input,
              (looks_like_a_path ? "no such file: " + name_or_path + ", nor a task of the suite by that name"
                                 : "no task named '" + name_or_path + "'") +
                  "; the closest names: " + closest_names(all, query, 5),
              hint, "suite " + suite.string());
}

std::string resolve_task_file(const std::string& name_or_path) {
  return find_task(default_suite_dir(), name_or_path).path.string();
}

}  // namespace cudal1

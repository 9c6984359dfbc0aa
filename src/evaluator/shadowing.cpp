#include "evaluator/shadowing.h"

#include <map>
#include <regex>
#include <sstream>

namespace cudal1 {

namespace {

struct TopLevel {
  std::map<std::string, std::string> constants;  // NAME = value text, column 0
  std::vector<std::string> functions;
};

TopLevel top_level(const std::string& source) {
  static const std::regex assign(R"(^([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([^=].*?)\s*(#.*)?$)");
  static const std::regex def(R"(^def\s+([A-Za-z_]\w*)\s*\()");
  TopLevel t;
  std::istringstream in(source);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, assign)) t.constants[m[1]] = m[2];
    else if (std::regex_search(line, m, def)) t.functions.push_back(m[1]);
  }
  return t;
}

}  // namespace

std::vector<std::string> shadowed_task_names(const std::string& task_source, const std::string& candidate_source) {
  TopLevel task = top_level(task_source), cand = top_level(candidate_source);
  std::vector<std::string> out;
  for (const char* fn : {"get_inputs", "get_init_inputs"})
    for (auto& f : cand.functions)
      if (f == fn) out.push_back(fn);
  for (auto& [name, value] : cand.constants) {
    auto it = task.constants.find(name);
    if (it != task.constants.end() && it->second != value)
      out.push_back(name + " (task: " + it->second + ", candidate: " + value + ")");
  }
  return out;
}

}  // namespace cudal1

#include "evaluator/shadowing.h"

#include <cctype>
#include <map>
#include <regex>
#include <sstream>

namespace cudal1 {

namespace {

struct TopLevel {
  std::map<std::string, std::string> constants;  // NAME = value text, column 0
  std::map<std::string, std::string> functions;  // name -> the def line and its indented body
};

std::string trim_right(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

TopLevel top_level(const std::string& source) {
  static const std::regex assign(R"(^([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*([^=].*?)\s*(#.*)?$)");
  static const std::regex def(R"(^def\s+([A-Za-z_]\w*)\s*\()");
  TopLevel t;
  std::istringstream in(source);
  std::string line;
  std::smatch m;
  std::string* body = nullptr;  // the function being read, until the next line at column 0
  while (std::getline(in, line)) {
    if (body && (line.empty() || std::isspace(static_cast<unsigned char>(line[0])))) {
      if (!trim_right(line).empty()) *body += trim_right(line) + "\n";
      continue;
    }
    body = nullptr;
    if (std::regex_match(line, m, assign)) {
      t.constants[m[1]] = m[2];
    } else if (std::regex_search(line, m, def)) {
      body = &t.functions[m[1]];
      *body = trim_right(line) + "\n";
    }
  }
  return t;
}

}  // namespace

std::vector<std::string> shadowed_task_names(const std::string& task_source, const std::string& candidate_source) {
  TopLevel task = top_level(task_source), cand = top_level(candidate_source);
  std::vector<std::string> out;
  // A candidate that carries the task's own definitions along (a rewrite of the whole file) changes
  // nothing: only a definition that differs is reported.
  for (const char* fn : {"get_inputs", "get_init_inputs"}) {
    auto c = cand.functions.find(fn);
    if (c == cand.functions.end()) continue;
    auto t = task.functions.find(fn);
    if (t == task.functions.end() || t->second != c->second) out.push_back(fn);
  }
  for (auto& [name, value] : cand.constants) {
    auto it = task.constants.find(name);
    if (it != task.constants.end() && it->second != value)
      out.push_back(name + " (task: " + it->second + ", candidate: " + value + ")");
  }
  return out;
}

}  // namespace cudal1

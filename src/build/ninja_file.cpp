#include "build/ninja_file.h"

#include <sstream>

#include "core/error.h"

namespace cudal1 {

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

[[noreturn]] void unexpected(const std::string& line) {
  throw Error(ErrorKind::internal, "torch's build.ninja holds a line the build service does not read: " + line.substr(0, 200),
              "this torch writes build files differently from the versions cudal1 knows; build with --no-fast "
              "or report the torch version");
}

// Ninja's own escapes in a path list: "$ " is a space, "$:" a colon, "$$" a dollar.
std::vector<std::string> split_paths(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size()) {
      cur += s[++i];
    } else if (s[i] == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

const std::string& NinjaFile::var(const std::string& name) const {
  static const std::string empty;
  auto it = vars.find(name);
  return it == vars.end() ? empty : it->second;
}

std::string NinjaFile::command(const std::string& rule, const std::vector<std::string>& in,
                               const std::string& out) const {
  auto it = rules.find(rule);
  if (it == rules.end())
    throw Error(ErrorKind::internal, "torch's build.ninja has no rule '" + rule + "'");
  std::string joined;
  for (auto& i : in) joined += (joined.empty() ? "" : " ") + i;
  const std::string& t = it->second;
  std::string r;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '$' || i + 1 >= t.size()) {
      r += t[i];
      continue;
    }
    char n = t[i + 1];
    if (n == '$' || n == ' ' || n == ':') {
      r += n;
      ++i;
      continue;
    }
    std::size_t b = i + 1, e = b;
    bool braced = n == '{';
    if (braced) {
      ++b;
      e = b;
    }
    while (e < t.size() && (isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_')) ++e;
    std::string name = t.substr(b, e - b);
    if (name == "in") r += joined;
    else if (name == "out") r += out;
    else r += var(name);
    i = braced ? e : e - 1;
  }
  return r;
}

const NinjaFile::Edge* NinjaFile::edge_with_rule(const std::string& rule) const {
  for (auto& e : edges)
    if (e.rule == rule) return &e;
  return nullptr;
}

NinjaFile parse_ninja(const std::string& text) {
  NinjaFile f;
  std::istringstream in(text);
  std::string line, rule;
  while (std::getline(in, line)) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    bool indented = line[0] == ' ' || line[0] == '\t';
    std::string t = trim(line);
    if (indented) {
      if (rule.empty()) unexpected(line);
      auto eq = t.find('=');
      if (eq == std::string::npos) unexpected(line);
      if (trim(t.substr(0, eq)) == "command") f.rules[rule] = trim(t.substr(eq + 1));
      continue;
    }
    rule.clear();
    if (t.rfind("rule ", 0) == 0) {
      rule = trim(t.substr(5));
    } else if (t.rfind("build ", 0) == 0) {
      auto colon = t.find(": ");
      if (colon == std::string::npos) unexpected(line);
      auto rest = split_paths(t.substr(colon + 2));
      if (rest.empty()) unexpected(line);
      NinjaFile::Edge e{trim(t.substr(6, colon - 6)), rest[0], {rest.begin() + 1, rest.end()}};
      f.edges.push_back(std::move(e));
    } else if (t.rfind("default ", 0) == 0) {
      continue;
    } else {
      auto eq = t.find('=');
      if (eq == std::string::npos) unexpected(line);
      f.vars[trim(t.substr(0, eq))] = trim(t.substr(eq + 1));
    }
  }
  return f;
}

}  // namespace cudal1

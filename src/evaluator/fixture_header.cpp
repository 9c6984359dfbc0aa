#include "evaluator/fixture_header.h"

#include <sstream>

namespace cudal1 {

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

}  // namespace

std::string FixtureHeader::first(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() || it->second.empty() ? "" : it->second.front();
}

FixtureHeader read_fixture_header(const std::string& text) {
  FixtureHeader h;
  std::istringstream in(text);
  bool in_header = true;
  for (std::string line; std::getline(in, line);) {
    if (in_header && line.rfind("# ", 0) == 0) {
      if (auto colon = line.find(':'); colon != std::string::npos) {
        std::string key = trim(line.substr(2, colon - 2));
        if (!key.empty() && key.find(' ') == std::string::npos) {
          h.values[key].push_back(trim(line.substr(colon + 1)));
          continue;
        }
      }
    }
    in_header = false;
    h.code += line + "\n";
  }
  return h;
}

}  // namespace cudal1

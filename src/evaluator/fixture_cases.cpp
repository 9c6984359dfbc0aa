#include "evaluator/fixture_cases.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "evaluator/fixture_header.h"

namespace fs = std::filesystem;

namespace cudal1 {

std::string FixtureCase::name() const { return candidate.stem().string(); }

fs::path fixtures_dir() {
  if (const char* env = std::getenv("CUDAL1_FIXTURES_DIR")) return env;
  return CUDAL1_FIXTURES_DIR;
}

std::vector<FixtureCase> load_fixture_cases(const std::string& sub, const std::string& device) {
  std::vector<FixtureCase> out;
  fs::path dir = fixtures_dir() / sub;
  if (!fs::is_directory(dir)) return out;
  for (auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".py") continue;
    FixtureCase c;
    c.candidate = entry.path();
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    c.builds_extension = text.str().find("load_inline") != std::string::npos;
    FixtureHeader h = read_fixture_header(text.str());
    std::string task = h.first("task");
    if (!h.first("expect-status").empty()) c.statuses = {h.first("expect-status")};
    std::stringstream any(h.first("expect-status-any"));
    for (std::string s; std::getline(any, s, ',');) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      c.statuses.push_back(s);
    }
    bool accepted_set = !h.first("expect-accepted").empty();
    c.accepted = h.first("expect-accepted") == "true";
    if (auto it = h.values.find("expect-flag"); it != h.values.end()) c.flags = it->second;
    if (!h.first("device").empty()) c.device = h.first("device");
    c.why = h.first("why");
    if (!h.first("family").empty()) c.family = h.first("family");
    if (!h.first("expect-max-speedup").empty()) c.max_speedup = std::stod(h.first("expect-max-speedup"));
    if (task.empty() || c.statuses.empty() || !accepted_set)
      throw std::runtime_error(entry.path().string() +
                               ": fixture header needs '# task:', '# expect-status:' and '# expect-accepted:'");
    c.task = fixtures_dir() / "tasks" / task;
    if (c.device == device) out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name() < b.name(); });
  return out;
}

}  // namespace cudal1

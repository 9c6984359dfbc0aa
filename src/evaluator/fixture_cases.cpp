#include "evaluator/fixture_cases.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace cudal1 {

std::string FixtureCase::name() const { return candidate.stem().string(); }

fs::path fixtures_dir() {
  if (const char* env = std::getenv("CUDAL1_FIXTURES_DIR")) return env;
  return CUDAL1_FIXTURES_DIR;
}

static std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
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
    std::string line, task;
    bool accepted_set = false;
    while (std::getline(in, line)) {
      if (line.find("load_inline") != std::string::npos) c.builds_extension = true;
      if (line.rfind("# ", 0) != 0) continue;
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = trim(line.substr(2, colon - 2)), value = trim(line.substr(colon + 1));
      if (key == "task") task = value;
      else if (key == "expect-status") c.statuses = {value};
      else if (key == "expect-status-any") {
        std::stringstream ss(value);
        std::string s;
        while (std::getline(ss, s, ',')) c.statuses.push_back(trim(s));
      } else if (key == "expect-accepted") {
        c.accepted = value == "true";
        accepted_set = true;
      } else if (key == "expect-flag") c.flags.push_back(value);
      else if (key == "device") c.device = value;
      else if (key == "why") c.why = value;
      else if (key == "family") c.family = value;
      else if (key == "expect-max-speedup") c.max_speedup = std::stod(value);
    }
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

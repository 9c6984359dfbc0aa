#include "policy/response.h"

#include <cctype>
#include <sstream>
#include <vector>

namespace cudal1::policy {

const char* response_outcome_name(ResponseOutcome o) {
  switch (o) {
    case ResponseOutcome::ok: return "ok";
    case ResponseOutcome::no_code: return "no_code";
    case ResponseOutcome::no_modelnew: return "no_modelnew";
    case ResponseOutcome::several_candidates: return "several_candidates";
    case ResponseOutcome::truncated: return "truncated";
  }
  return "?";
}

const char* response_outcome_reason(ResponseOutcome o) {
  switch (o) {
    case ResponseOutcome::ok: return "";
    case ResponseOutcome::no_code: return "the answer has no fenced code block under `## Code Implementation`";
    case ResponseOutcome::no_modelnew: return "the answer's code defines no `class ModelNew`";
    case ResponseOutcome::several_candidates: return "the answer's `## Code Implementation` holds more than one ModelNew file";
    case ResponseOutcome::truncated: return "the answer was cut off (the token limit, or a code fence never closed)";
  }
  return "?";
}

namespace {

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// "## Code Implementation" and the like, case and spacing forgiven; "" for other lines.
std::string heading(const std::string& line) {
  std::string t = trim(line);
  if (t.rfind("##", 0) != 0 || t.rfind("###", 0) == 0) return "";
  std::string name;
  for (char c : t.substr(2))
    if (std::isalpha(static_cast<unsigned char>(c))) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Markdown code fences, as CommonMark reads them: a line starting with three or more backticks
// opens a block; only a line of backticks alone, at least as many, closes it. So a file holding
// lines that start with ``` can be quoted whole in a ```` block.
class Fences {
 public:
  enum class Step { none, opens, closes };
  Step step(const std::string& line) {
    std::string t = trim(line);
    std::size_t n = 0;
    while (n < t.size() && t[n] == '`') ++n;
    if (open_ == 0 && n >= 3) return open_ = n, Step::opens;
    if (open_ > 0 && n >= open_ && n == t.size()) return open_ = 0, Step::closes;
    return Step::none;
  }
  bool inside() const { return open_ > 0; }

 private:
  std::size_t open_ = 0;
};

struct Sections {
  std::string analysis, design, code;
  bool has_code = false;
};

Sections split_sections(const std::string& text) {
  Sections s;
  std::istringstream in(text);
  std::string line, *into = nullptr;
  Fences fences;  // a "## " line inside a code block is code, not a heading
  while (std::getline(in, line)) {
    bool fenced = fences.step(line) != Fences::Step::none || fences.inside();
    std::string h = fenced ? "" : heading(line);
    if (h == "performanceanalysis") { into = &s.analysis; continue; }
    if (h == "algorithmdesign") { into = &s.design; continue; }
    if (h == "codeimplementation") { into = &s.code; s.has_code = true; continue; }
    if (!h.empty()) { into = nullptr; continue; }
    if (into) *into += line + "\n";
  }
  return s;
}

struct Block {
  std::string body;
  bool closed = false;
};

std::vector<Block> fenced_blocks(const std::string& section) {
  std::vector<Block> blocks;
  std::istringstream in(section);
  std::string line;
  Fences fences;
  while (std::getline(in, line)) {
    Fences::Step step = fences.step(line);
    if (step == Fences::Step::opens) blocks.push_back({});
    else if (step == Fences::Step::closes) blocks.back().closed = true;
    else if (fences.inside()) blocks.back().body += line + "\n";
  }
  return blocks;
}

bool defines_modelnew(const std::string& code) {
  std::istringstream in(code);
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.rfind("class ModelNew", 0) == 0 && t.size() > 14 && (t[14] == '(' || t[14] == ':' || t[14] == ' ')) return true;
  }
  return false;
}

}  // namespace

ParsedResponse parse_response(const std::string& text, const std::string& finish_reason) {
  ParsedResponse r;
  Sections s = split_sections(text);
  r.analysis = trim(s.analysis);
  r.design = trim(s.design);
  std::vector<Block> blocks = s.has_code ? fenced_blocks(s.code) : std::vector<Block>();
  bool cut = finish_reason == "length" || (!blocks.empty() && !blocks.back().closed);
  int with_model = 0;
  const Block* chosen = nullptr;
  for (auto& b : blocks)
    if (b.closed && defines_modelnew(b.body)) {
      ++with_model;
      chosen = chosen ? chosen : &b;
    }
  if (cut && with_model == 0) return r.outcome = ResponseOutcome::truncated, r;
  if (blocks.empty()) return r.outcome = ResponseOutcome::no_code, r;
  if (with_model == 0) return r.outcome = ResponseOutcome::no_modelnew, r;
  if (with_model > 1) return r.outcome = ResponseOutcome::several_candidates, r;
  // A whole file in a closed block is usable even when the answer ran on past the limit after it.
  r.outcome = ResponseOutcome::ok;
  r.code = chosen->body;
  return r;
}

}  // namespace cudal1::policy

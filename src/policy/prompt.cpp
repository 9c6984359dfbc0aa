#include "policy/prompt.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

#include "core/error.h"

namespace fs = std::filesystem;

namespace cudal1::policy {

namespace {

std::string read_template(const fs::path& dir, const char* name) {
  std::ifstream in(dir / name, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::input, "no prompt template " + (dir / name).string(),
                "copy the bundled prompts/ folder and edit it, or leave the prompts option out");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim_right(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines) out += l + "\n";
  return out;
}

// Comment-only and blank lines out (a `#` line inside a CUDA source string is a preprocessor
// directive, kept).
std::string without_comments(const std::string& code) {
  std::vector<std::string> kept;
  for (auto& l : lines_of(code)) {
    std::size_t a = l.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    bool directive = l.compare(a, 8, "#include") == 0 || l.compare(a, 7, "#define") == 0 || l.compare(a, 7, "#pragma") == 0 ||
                     l.compare(a, 3, "#if") == 0 || l.compare(a, 6, "#endif") == 0 || l.compare(a, 5, "#else") == 0;
    if ((l[a] == '#' && !directive) || l.compare(a, 2, "//") == 0) continue;
    kept.push_back(l);
  }
  return join(kept);
}

// Keeps the first and last quarter of the lines, at least 8 each; the middle becomes one marker.
std::string elide_middle(const std::string& code, std::size_t keep_each) {
  auto lines = lines_of(code);
  if (lines.size() <= 2 * keep_each + 1) return code;
  std::vector<std::string> out(lines.begin(), lines.begin() + long(keep_each));
  out.push_back("# ... " + std::to_string(lines.size() - 2 * keep_each) + " lines omitted ...");
  out.insert(out.end(), lines.end() - long(keep_each), lines.end());
  return join(out);
}

std::string speedup_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", s);
  return buf;
}

}  // namespace

// Replaces every {{key}}; a placeholder the template does not have is simply not used.
std::string fill_template(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (auto& [key, value] : values) {
    std::string mark = "{{" + key + "}}";
    for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + value.size()))
      text.replace(at, mark.size(), value);
  }
  return text;
}

PromptTemplates PromptTemplates::load(const fs::path& dir) {
  PromptTemplates t{read_template(dir, "first_round.md"), read_template(dir, "contrastive.md"), read_template(dir, "exemplar.md"),
                    read_template(dir, "restrictions.md"), read_template(dir, "answer_format.md"), ""};
  t.feedback = read_template(fs::exists(dir / "feedback.md") ? dir : bundled_prompts_dir(), "feedback.md");
  return t;
}

fs::path bundled_prompts_dir() {
  if (const char* env = std::getenv("CUDAL1_PROMPTS_DIR"); env && *env) return env;
  return CUDAL1_SOURCE_PROMPTS_DIR;
}

BuiltPrompt build_prompt(const PromptTemplates& t, const PromptRequest& request, const PromptBudget& budget) {
  auto count = budget.count_tokens ? budget.count_tokens
                                   : [](const std::string& s) { return static_cast<std::size_t>(double(s.size()) / 3.5 + 0.5); };
  // Fastest first: when one has to go, the slowest goes.
  std::vector<PromptExemplar> shown = request.exemplars;
  std::stable_sort(shown.begin(), shown.end(), [](auto& a, auto& b) { return a.speedup > b.speedup; });
  std::vector<bool> shortened(shown.size(), false);

  auto render = [&]() {
    std::string exemplars;
    for (std::size_t i = 0; i < shown.size(); ++i)
      exemplars += fill_template(t.exemplar, {{"index", std::to_string(i + 1)}, {"speedup", speedup_text(shown[i].speedup)},
                                     {"code", trim_right(shown[i].code)}}) + "\n";
    const std::string& frame = shown.empty() ? t.first_round : t.contrastive;
    return fill_template(frame, {{"task", request.task}, {"device", request.device}, {"reference", trim_right(request.reference)},
                        {"restrictions", trim_right(t.restrictions)}, {"answer_format", trim_right(t.answer_format)},
                        {"exemplars", trim_right(exemplars)}});
  };

  BuiltPrompt out;
  out.text = render();
  // Shorten step by step until it fits: comments out of every exemplar, then the longest one's
  // middle halved again and again (down to 8 lines at each end), then the slowest dropped.
  if (count(out.text) > budget.max_tokens)
    for (std::size_t i = 0; i < shown.size(); ++i) {
      std::string c = without_comments(shown[i].code);
      shortened[i] = shortened[i] || c != shown[i].code;
      shown[i].code = c;
    }
  while ((out.text = render(), count(out.text) > budget.max_tokens) && !shown.empty()) {
    std::size_t longest = 0;
    for (std::size_t i = 1; i < shown.size(); ++i)
      if (lines_of(shown[i].code).size() > lines_of(shown[longest].code).size()) longest = i;
    std::size_t n = lines_of(shown[longest].code).size();
    std::size_t keep = std::max<std::size_t>(8, n / 4);
    if (n > 2 * 8 + 1 && keep * 2 + 1 < n) {
      shown[longest].code = elide_middle(shown[longest].code, keep);
      shortened[longest] = true;
    } else {
      shown.pop_back();
      shortened.pop_back();
    }
  }
  out.tokens = count(out.text);
  out.exemplars_shown = shown.size();
  out.exemplars_shortened = static_cast<std::size_t>(std::count(shortened.begin(), shortened.end(), true));
  out.over_budget = out.tokens > budget.max_tokens;
  return out;
}

}  // namespace cudal1::policy

#include "build/shell.h"

#include "runner/process.h"

namespace cudal1 {

namespace {

bool is_operator_or_glob(char c) {
  switch (c) {
    case '$': case '`': case ';': case '|': case '&': case '<': case '>': case '(': case ')':
    case '*': case '?': case '[': case '#': case '\n': case '~': case '{': case '}':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<std::vector<std::string>> shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      auto end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= text.size()) return std::nullopt;
        char d = text[i];
        if (d == '"') break;
        if (d == '$' || d == '`') return std::nullopt;
        // Inside double quotes a backslash escapes only these; elsewhere it stays.
        if (d == '\\' && i + 1 < text.size() && std::string_view("$`\"\\").find(text[i + 1]) != std::string_view::npos)
          d = text[++i];
        word += d;
      }
    } else if (c == '\\') {
      if (i + 1 >= text.size() || text[i + 1] == '\n') return std::nullopt;
      word += text[++i];
    } else if (is_operator_or_glob(c)) {
      return std::nullopt;
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string shell_quote(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word)
    plain &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             std::string_view("-_=+./:,@%").find(c) != std::string_view::npos;
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

std::string sh_output(const std::string& command, int timeout_s) {
  ProcessSpec ps;
  ps.argv = {"/bin/sh", "-c", command};
  Process p(ps);
  std::string line;
  while (p.read_line(std::chrono::seconds(timeout_s), line) == WaitOutcome::line) {
  }
  return p.stdout_tail();
}

}  // namespace cudal1

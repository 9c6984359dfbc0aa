#include "core/text.h"

namespace cudal1 {

std::string_view first_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  while (cut > 0 && utf8_continuation(text[cut])) --cut;  // text[cut] starts the rest
  return text.substr(0, cut);
}

std::string_view python_exception_line(std::string_view text, std::size_t max_bytes) {
  constexpr std::string_view kHeader = "Traceback (most recent call last):";
  std::size_t at = text.rfind(kHeader);
  while (at != std::string_view::npos && at > 0 && text[at - 1] != '\n')
    at = text.rfind(kHeader, at - 1);
  if (at == std::string_view::npos) return {};
  // Frames and their source lines are indented; the exception is the first line that is not.
  std::string_view rest = text.substr(at + kHeader.size());
  while (!rest.empty()) {
    std::size_t end = rest.find('\n');
    std::string_view line = first_line(rest);
    if (!line.empty() && line.front() != ' ' && line.front() != '\t') return utf8_prefix(line, max_bytes);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return {};
}

}  // namespace cudal1

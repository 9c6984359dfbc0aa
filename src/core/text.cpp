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

}  // namespace cudal1

#include "cli/error_first_lines.h"

#include <string>

#include "core/text.h"

namespace cudal1::cli {

bool keep_first_lines(nlohmann::json& object, std::initializer_list<std::string_view> keys) {
  bool cut = false;
  if (!object.is_object()) return cut;
  for (std::string_view key : keys) {
    auto it = object.find(std::string(key));
    if (it == object.end() || !it->is_string()) continue;
    const std::string& text = it->get_ref<const std::string&>();
    std::string_view line = first_line(text);
    if (line.size() == text.size()) continue;
    *it = std::string(line);
    cut = true;
  }
  return cut;
}

}  // namespace cudal1::cli

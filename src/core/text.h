// core/text.h — cutting a message down for a line of a table or a file that others will read.
#pragma once

#include <cstddef>
#include <string_view>

namespace cudal1 {

// `text` up to its first line break; a "\r" before the break goes with it.
std::string_view first_line(std::string_view text);

// At most `max_bytes` of `text`'s start, never ending inside a UTF-8 character (compilers quote
// names in curly quotes).
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace cudal1

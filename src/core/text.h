// core/text.h — cutting a message down for a line of a table or a file that others will read.
#pragma once

#include <string_view>

namespace cudal1 {

// `text` up to its first line break; a "\r" before the break goes with it.
std::string_view first_line(std::string_view text);

}  // namespace cudal1

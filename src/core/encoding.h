// core/encoding.h — base64, the form raw tensor bytes take inside JSON replies.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cudal1 {

// Decodes standard base64 (with '=' padding); throws Error(runner) on malformed text.
std::vector<uint8_t> base64_decode(std::string_view text);

}  // namespace cudal1

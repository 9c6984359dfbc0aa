#include "tokenizer/byte_level.h"

#include <unordered_map>

#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::unordered_map<char32_t, unsigned char> to_byte;

  Tables() {
    // Printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0,
    // 0xAD) take the code points from U+0100 on, in byte order.
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<unsigned char>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(unsigned char b) { return tables().to_char[b]; }

std::optional<unsigned char> char_to_byte(char32_t c) {
  const auto& m = tables().to_byte;
  auto it = m.find(c);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::string bytes_to_token(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) utf8_append(out, byte_to_char(static_cast<unsigned char>(ch)));
  return out;
}

std::optional<std::string> token_to_bytes_strict(std::string_view token) {
  if (!is_valid_utf8(token)) return std::nullopt;
  std::string out;
  out.reserve(token.size());
  for (std::size_t i = 0; i < token.size();) {
    char32_t cp;
    i += utf8_decode(token, i, cp);
    auto b = char_to_byte(cp);
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
  }
  return out;
}

std::string token_to_bytes(std::string_view token) {
  if (auto bytes = token_to_bytes_strict(token)) return *bytes;
  return std::string(token);
}

}  // namespace cudal1::tokenizer

#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {
namespace {

// How many bytes a sequence that starts with `lead` needs, and the valid range of its second
// byte (the first continuation byte is where overlongs and surrogates are ruled out). 0: `lead`
// can never start a sequence.
struct LeadInfo {
  int length;
  unsigned char lo, hi;
};

LeadInfo lead_info(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Length of the valid sequence at `pos`, or, when invalid, minus the length of its maximal
// subpart (at least 1): the bytes one U+FFFD replaces.
long sequence_at(std::string_view s, std::size_t pos) {
  auto b = static_cast<unsigned char>(s[pos]);
  LeadInfo info = lead_info(b);
  if (info.length == 1) return 1;
  if (info.length == 0) return -1;
  std::size_t i = 1;
  for (; i < static_cast<std::size_t>(info.length); ++i) {
    if (pos + i >= s.size()) return -static_cast<long>(i);
    auto c = static_cast<unsigned char>(s[pos + i]);
    bool ok = i == 1 ? (c >= info.lo && c <= info.hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return -static_cast<long>(i);
  }
  return info.length;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    long n = sequence_at(bytes, i);
    if (n < 0) return false;
    i += static_cast<std::size_t>(n);
  }
  return true;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    long n = sequence_at(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-n);
    }
  }
  return out;
}

std::size_t utf8_decode(std::string_view t, std::size_t pos, char32_t& cp) {
  auto b0 = static_cast<unsigned char>(t[pos]);
  auto cont = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(t[pos + k]) & 0x3F); };
  if (b0 < 0x80) { cp = b0; return 1; }
  if (b0 < 0xE0) { cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | cont(1); return 2; }
  if (b0 < 0xF0) { cp = (static_cast<char32_t>(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2); return 3; }
  cp = (static_cast<char32_t>(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  return 4;
}

std::size_t utf8_length_before(std::string_view t, std::size_t end) {
  std::size_t n = 1;
  while (n < end && n < 4 && (static_cast<unsigned char>(t[end - n]) & 0xC0) == 0x80) ++n;
  return n;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_rust_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_python_whitespace(char32_t c) { return is_rust_whitespace(c) || (c >= 0x1C && c <= 0x1F); }

std::string_view python_strip(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end) {
    char32_t cp;
    std::size_t n = utf8_decode(text, begin, cp);
    if (!is_python_whitespace(cp)) break;
    begin += n;
  }
  while (end > begin) {
    std::size_t n = utf8_length_before(text, end);
    char32_t cp;
    utf8_decode(text, end - n, cp);
    if (!is_python_whitespace(cp)) break;
    end -= n;
  }
  return text.substr(begin, end - begin);
}

}  // namespace cudal1::tokenizer

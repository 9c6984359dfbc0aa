#include "report/html.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/hash.h"
#include "core/text.h"

namespace cudal1 {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at text[i] (1-4), or 0 when it is not one
// (stray continuation byte, overlong form, surrogate, past U+10FFFF, cut short).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  unsigned char c1 = b(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 >= 0x90) return 0;  // past U+10FFFF
  return n;
}

// Calls `ascii(c)` for each ASCII byte and `other(seq)` for each well-formed multi-byte
// character or U+FFFD replacing an ill-formed byte.
template <class Ascii, class Other>
void for_each_char(std::string_view text, Ascii ascii, Other other) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_length(text, i);
    if (n == 1) ascii(text[i]);
    else other(n ? text.substr(i, n) : kReplacement);
    i += n ? n : 1;
  }
}

bool is_dropped_control(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F;
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for_each_char(
      text,
      [&](char c) {
        switch (c) {
          case '&': out += "&amp;"; break;
          case '<': out += "&lt;"; break;
          case '>': out += "&gt;"; break;
          case '"': out += "&quot;"; break;
          case '\'': out += "&#39;"; break;
          default:
            if (!is_dropped_control(c)) out += c;
        }
      },
      [&](std::string_view seq) { out += seq; });
  return out;
}

std::string escape_markdown(std::string_view text) {
  // What can format inside a table cell; text never starts a line, so - + . ( ) need nothing.
  static constexpr std::string_view kPunct = "\\`*_[]|~#";
  std::string out;
  out.reserve(text.size() + 16);
  for_each_char(
      text,
      [&](char c) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '\n' || c == '\r' || c == '\t') out += ' ';
        else if (kPunct.find(c) != std::string_view::npos) (out += '\\') += c;
        else if (!is_dropped_control(c)) out += c;
      },
      [&](std::string_view seq) { out += seq; });
  return out;
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return std::string(utf8_prefix(text, max_bytes)) + "\xE2\x80\xA6";  // U+2026
}

std::string first_and_last_lines(std::string_view text, std::size_t head_bytes, std::size_t tail_bytes) {
  std::size_t eol = text.find('\n');
  std::string head = truncate_utf8(text.substr(0, eol), head_bytes);
  if (eol == std::string_view::npos) return head;
  std::string_view rest = text.substr(eol + 1);
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  if (rest.empty()) return head;
  if (rest.size() <= tail_bytes) return head + "\n" + std::string(rest);
  // The last lines that fit whole; a single last line longer than that is cut at its start.
  std::string_view tail = rest.substr(rest.size() - tail_bytes);
  if (std::size_t nl = tail.find('\n'); nl != std::string_view::npos && nl + 1 < tail.size()) {
    tail.remove_prefix(nl + 1);
  } else {
    while (!tail.empty() && utf8_continuation(tail.front())) tail.remove_prefix(1);
  }
  return head + "\n\xE2\x80\xA6\n" + std::string(tail);
}

std::string escape_html_cut(std::string_view text, std::size_t max_bytes) {
  return escape_html(truncate_utf8(text, max_bytes));
}

std::string format_speedup(double v) {
  char buf[64];
  int digits = std::abs(v) < 10 ? 2 : std::abs(v) < 100 ? 1 : 0;
  std::snprintf(buf, sizeof buf, "%.*fx", digits, v);
  return buf;
}

std::string format_percent(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string csp_sha256(std::string_view text) {
  std::string hex = sha256_hex(text), raw;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return "'sha256-" + base64_encode(raw) + "'";
}

}  // namespace cudal1

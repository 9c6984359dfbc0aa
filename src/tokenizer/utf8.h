// tokenizer/utf8.h — the UTF-8 helpers the tokenizer needs: validation, lossy repair of byte
// sequences that are not UTF-8, and the whitespace definitions of the libraries we mirror.
//
// Decoding a prefix of a generation, or a single token, routinely cuts a multi-byte character in
// half. Hugging Face turns such bytes into U+FFFD the way Rust's String::from_utf8_lossy does
// (one replacement per "maximal subpart" of an invalid sequence, as Unicode recommends); we must
// produce exactly the same text or decoded rewards and prompts drift from the reference.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cudal1::tokenizer {

// True when `bytes` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// `bytes` with every maximal invalid subpart replaced by U+FFFD (Rust from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

// Decodes the code point starting at `pos` of VALID UTF-8 and returns its length in bytes.
std::size_t utf8_decode(std::string_view text, std::size_t pos, char32_t& cp);

// Length in bytes of the code point that ENDS at `end` (exclusive) in valid UTF-8.
std::size_t utf8_length_before(std::string_view text, std::size_t end);

void utf8_append(std::string& out, char32_t cp);

// Rust's char::is_whitespace (the Unicode White_Space property): what HF's added tokens strip
// with lstrip / rstrip.
bool is_rust_whitespace(char32_t cp);

// Python's str.isspace, which Jinja's `trim` filter (str.strip) uses: White_Space plus the
// information separators U+001C..U+001F.
bool is_python_whitespace(char32_t cp);

// Python's str.strip() on UTF-8 text.
std::string_view python_strip(std::string_view text);

}  // namespace cudal1::tokenizer

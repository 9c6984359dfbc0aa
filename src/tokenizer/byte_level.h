// tokenizer/byte_level.h — GPT-2's byte-level alphabet: the reversible map from each of the 256
// byte values to a printable Unicode character.
//
// Byte-level BPE vocabularies (GPT-2, Qwen2, Llama-3) store tokens in this alphabet, so that any
// byte string, valid UTF-8 or not, is a string of vocabulary characters: a space is "Ġ" (U+0120),
// a newline "Ċ" (U+010A). The tokenizer works on raw bytes internally and uses this map only to
// read the vocabulary and to answer id_to_token / token_to_id in HF's spelling.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace cudal1::tokenizer {

// The character byte `b` stands for (bytes_to_unicode() in GPT-2's encoder.py).
char32_t byte_to_char(unsigned char b);

// The byte a vocabulary character stands for, or nullopt for a character outside the alphabet.
std::optional<unsigned char> char_to_byte(char32_t c);

// Raw bytes -> the vocabulary's spelling (UTF-8 of the mapped characters).
std::string bytes_to_token(std::string_view bytes);

// The vocabulary's spelling -> raw bytes. A token with any character outside the alphabet comes
// back as its own UTF-8 bytes, unchanged: HF's ByteLevel decoder does the same per token (it is
// how an added token such as "<|im_end|>" or one holding a real space decodes).
std::string token_to_bytes(std::string_view token);

// Like token_to_bytes, but nullopt when a character is outside the alphabet: tokens BPE can
// never produce from bytes.
std::optional<std::string> token_to_bytes_strict(std::string_view token);

}  // namespace cudal1::tokenizer

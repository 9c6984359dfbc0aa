// core/text.h — cutting a message down for a line of a table or a file that others will read.
#pragma once

#include <cstddef>
#include <string_view>

namespace cudal1 {

// `text` up to its first line break; a "\r" before the break goes with it.
std::string_view first_line(std::string_view text);

// A byte inside a UTF-8 character (10xxxxxx): a cut there would split the character.
inline bool utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// At most `max_bytes` of `text`'s start, never ending inside a UTF-8 character (compilers quote
// names in curly quotes).
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

// The exception line ("torch.AcceleratorError: CUDA error: out of memory") of the last Python
// traceback in a process's output; empty when there is none. A process that dies before it
// answers leaves only its stderr, whose first line ("Traceback (most recent call last):") says
// nothing, and whose last lines may be advice the library printed after the exception. At most
// `max_bytes` of it: the process may be hostile and its one line endless.
std::string_view python_exception_line(std::string_view text, std::size_t max_bytes = 300);

}  // namespace cudal1

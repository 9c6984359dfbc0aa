// build/shell.h — the POSIX shell words of a command-line fragment, and back; a short command's output.
//
// torch writes its flags for /bin/sh (ninja runs every command through `sh -c`), quoted its own
// way: '-fPIC', -DPYBIND11_COMPILER_TYPE=\"_gcc\". The fast path edits flag lists word by word,
// so it needs the words exactly as sh would see them, and must know when it cannot tell.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudal1 {

// The words of `text` after sh's quote removal, or nullopt when the text holds anything whose
// meaning depends on more than quoting: expansions ($, `), operators (; | & < > ( )), globs,
// comments, a newline, or an unterminated quote.
std::optional<std::vector<std::string>> shell_words(std::string_view text);

// One word quoted so that sh reads it back unchanged.
std::string shell_quote(std::string_view word);

// Words quoted and joined by spaces.
std::string shell_join(const std::vector<std::string>& words);

// What `command` (for sh -c) prints on stdout, when it ends within `timeout_s`; for quick
// questions to the toolchain (compiler versions), not for candidates' code.
std::string sh_output(const std::string& command, int timeout_s);

}  // namespace cudal1

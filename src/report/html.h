// report/html.h — text made safe for an HTML page or a Markdown file, from untrusted input.
//
// Every string in a bench report (task names, flag evidence, titles) comes from files a candidate
// or a kernel set's authors wrote, so nothing reaches the page unescaped. Both escapers also
// replace invalid UTF-8 with U+FFFD and drop control characters, so a hostile byte string cannot
// break the page's encoding.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cudal1 {

// & < > " ' as entities: safe in element text and in quoted attribute values (HTML and SVG).
std::string escape_html(std::string_view text);

// One line of Markdown that renders as the literal text: newlines become spaces, & < > as
// entities (Markdown passes raw HTML through), and Markdown's punctuation backslash-escaped
// (| would split a table cell, * _ ` [ ] # would format).
std::string escape_markdown(std::string_view text);

// At most `max_bytes` bytes, cut at a UTF-8 character boundary, "…" appended when cut.
std::string truncate_utf8(std::string_view text, std::size_t max_bytes);

// A long message for a row: its first line (at most `head_bytes`) and, when more follows, its
// last whole lines within `tail_bytes`, with "\n…\n" between. An error's first line says what
// failed; a traceback's last frames say where, and its first ones are the harness's own.
std::string first_and_last_lines(std::string_view text, std::size_t head_bytes, std::size_t tail_bytes);

// Untrusted text for a page: cut to `max_bytes`, then escaped (a 1 MB task name must not make a
// 1 MB table cell).
std::string escape_html_cut(std::string_view text, std::size_t max_bytes);

// How every report writes a speedup: "1.23x", "12.3x", "368x" (digits shrink as it grows).
std::string format_speedup(double v);
// A fraction as a percentage with one decimal: 0.4167 -> "41.7%".
std::string format_percent(double fraction);

// Standard base64 with '=' padding (the page's Content-Security-Policy names its script by hash).
std::string base64_encode(std::string_view bytes);

// The SHA-256 of `text` as a CSP source: 'sha256-<base64>'.
std::string csp_sha256(std::string_view text);

}  // namespace cudal1

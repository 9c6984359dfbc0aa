// cli/error_first_lines.h — verdict files fit to share: each error cut to its first line.
//
// An evaluation's error can quote the code it judged: a traceback's source lines, a compiler's
// message around the offending line. A file of verdicts on someone else's kernels that goes into
// a repository or a report must not carry their code. The first line says what failed ("case 0
// (normal inputs): RuntimeError: ...", "loading the candidate: ... defines no `ModelNew`"), which is
// all a carried verdict (--rows-from, --lines-from) and a report's reason need; the whole error
// stays in the store that measured it.
#pragma once

#include <initializer_list>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cudal1::cli {

inline constexpr const char* kErrorFirstLinesHelp =
    "each error says its first line only, quoting none of the kernel's code (for verdict files to "
    "commit or share; the store keeps the whole error)";

// Cuts each of `keys` in `object` that is a string to its first line; true when one was cut.
bool keep_first_lines(nlohmann::json& object, std::initializer_list<std::string_view> keys);

}  // namespace cudal1::cli

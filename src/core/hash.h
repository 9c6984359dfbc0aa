// core/hash.h — content hashes (SHA-256, hex) that name tasks, candidates and cached results,
// and the whole-file reads and writes of the contents they name. A cryptographic hash, because a
// candidate that could collide with an accepted one would inherit its cached verdict.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace cudal1 {

std::string sha256_hex(std::string_view data);

// Reads the whole file; throws Error(input) when it cannot.
std::string read_file(const std::filesystem::path& path);

// Writes `text` as the whole file, making its folder; throws Error(input) with `hint` when it cannot.
void write_file(const std::filesystem::path& path, const std::string& text, const std::string& hint);

// The same, for a file something durable (a job row written with synchronous=FULL) points to:
// written under a temporary name, synced, renamed into place and its folder synced, so after a
// crash or a power cut the path holds the whole text or does not exist. `mode` is the file's
// permissions exactly (the umask does not apply): 0444 leaves no moment when it is writable.
void write_file_durably(const std::filesystem::path& path, const std::string& text, const std::string& hint,
                        unsigned mode = 0644);

}  // namespace cudal1

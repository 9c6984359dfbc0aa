// core/hash.h — content hashes (SHA-256, hex) that name tasks, candidates and cached results.
// A cryptographic hash, because a candidate that could collide with an accepted one would
// inherit its cached verdict.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace cudal1 {

std::string sha256_hex(std::string_view data);

// Reads the whole file; throws Error(input) when it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace cudal1

// store/seal.h — a keyed seal on the rows cudal1 writes to its SQLite files (the results store,
// the reward service's jobs), so that a row written by anything else is never believed.
//
// Hostile candidate code once reached those files with sqlite3 and planted verdicts and job
// rewards. Keeping it out of reach is the sandbox's job; this is the second line: every row
// carries HMAC-SHA256 over its meaningful fields, under a random key in a file beside the
// database that only its owner can read. A writer without the key cannot make a seal that fits,
// so readers treat an unsealed or mis-sealed row as absent.
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cudal1 {

class Sealer {
 public:
  // Reads the key beside `database` (key_path), creating it on first use: 32 random bytes, mode
  // 0600, written to a private temporary file, synced, then linked into place, so two processes
  // opening a new database at once agree on one key and none ever reads half a key. Throws
  // Error(store) when the key file is open to group or others (what to chmod), not its owner's,
  // or damaged.
  explicit Sealer(const std::filesystem::path& database);

  // "<database>.key".
  static std::filesystem::path key_path(const std::filesystem::path& database);

  // Hex HMAC-SHA256 over `domain` (which kind of row: a seal of one kind never fits another) and
  // the fields, each written as its length then its bytes, so no two field lists serialise alike.
  std::string seal(std::string_view domain, const std::vector<std::string_view>& fields) const;
  // Whether `seal` is the seal of these fields; compared in constant time.
  bool verify(std::string_view seal, std::string_view domain, const std::vector<std::string_view>& fields) const;

  const std::filesystem::path& path() const { return key_path_; }

 private:
  std::filesystem::path key_path_;
  std::array<unsigned char, 32> key_{};
};

// Creates an empty database file only its owner can read or write, when there is none yet:
// SQLite then keeps that mode, and gives its -wal and -shm files the same.
void create_private_file(const std::filesystem::path& path);

// Says once per file on stderr that rows were ignored for a seal that does not fit, so a person
// notices something wrote to the file; later ones are only counted.
class SealAlarm {
 public:
  // `label` starts the line ("store", "jobs"); `hint` says what became of the rows and what to do.
  SealAlarm(std::string label, std::string hint) : label_(std::move(label)), hint_(std::move(hint)) {}
  void raise(std::size_t rows);
  std::size_t count() const { return count_; }

 private:
  std::string label_, hint_;
  std::size_t count_ = 0;
};

}  // namespace cudal1

// report/bench_carried_rows.h — rows an earlier bench wrote (`cudal1 bench --json`), taken again
// by a later run (`cudal1 bench --rows-from FILE`).
//
// The store makes a bench resumable on one machine. A kernel set scored over several lent GPU
// machines, each given back with its disk, carries its verdicts from one to the next in the bench
// JSON instead: every scored row names the task and the candidate it scored by the SHA-256 of
// their files, and its provenance names the protocol, so a row is taken again only for the same
// two files under the same protocol. A row that was not scored, or failed for want of an
// evaluation (status "error"), is never taken: the run scores it.
//
// The file is not sealed as the store is (store/seal.h): its rows are what the person who names
// it vouches for. The run marks each such row with carried_from (the file's name), and the
// reports count them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace cudal1 {

struct CarriedRows {
  std::string file;  // the file's name as given: what carried_from says
  std::map<std::string, nlohmann::json> by_key;  // carried_row_key(...) -> the row
  std::size_t rows = 0;      // rows in the file
  std::size_t unusable = 0;  // of them, rows that can never be taken (not scored, an evaluation
                             // error, or no hashes or protocol: written by an older cudal1)
};

// The key a row is found by.
std::string carried_row_key(const std::string& task_hash, const std::string& candidate_hash,
                            const std::string& protocol_key);

// Reads FILE, a bench JSON. A later row for the same key replaces an earlier one. Throws
// Error(input) saying what to do when the file cannot be read or is not a bench JSON.
CarriedRows read_carried_rows(const std::filesystem::path& file);

// The row for these files under this protocol, marked carried_from; nullopt when the file has none.
std::optional<nlohmann::json> find_carried_row(const CarriedRows& carried, const std::string& task_hash,
                                               const std::string& candidate_hash, const std::string& protocol_key);

// The sentence the reports print when the bench JSON's "carried_rows" counts any, else "".
std::string carried_rows_note(const nlohmann::json& bench);

}  // namespace cudal1

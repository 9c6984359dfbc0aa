// report/bench_carried_rows.h — rows an earlier bench wrote (`cudal1 bench --json`), taken again
// by a later run (`cudal1 bench --rows-from FILE`).
//
// The store makes a bench resumable on one machine. A kernel set scored over several lent GPU
// machines, each given back with its disk, carries its verdicts from one to the next in the bench
// JSON instead: every scored row names the task and the candidate it scored by the SHA-256 of
// their files, and its provenance names the protocol, so a row is taken again only for the same
// two files under the same protocol, on the same kind of device (a CPU's figures never answer for
// a GPU's, nor the reverse). A row that was not scored, failed for want of an evaluation (status
// "error"), or was ended by the machine rather than the candidate (its result's `infrastructure`,
// evaluator/infrastructure.h: no verdict, which the store does not keep either) is never taken:
// the run scores it.
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
  std::map<std::string, nlohmann::json> by_key;  // task, candidate, protocol, device kind -> the row
  std::size_t rows = 0;      // rows in the file
  std::size_t unusable = 0;  // of them, rows that can never be taken (not scored, an evaluation
                             // error, a machine's failure, or no hashes, protocol or device:
                             // written by an older cudal1)
};

// "cuda" for any CUDA device ("cuda", "cuda:1"), else the device itself ("cpu").
std::string carried_device_kind(const std::string& device);

// Reads FILE, a bench JSON. A later row for the same key replaces an earlier one. Throws
// Error(input) saying what to do when the file cannot be read or is not a bench JSON.
CarriedRows read_carried_rows(const std::filesystem::path& file);

// The row for these files under this protocol on this kind of device (the run's device, as
// "cuda:0" or "cpu"), marked carried_from, without the earlier run's speed-of-light fraction
// (the run computes its own, or none); nullopt when the file has none.
std::optional<nlohmann::json> find_carried_row(const CarriedRows& carried, const std::string& task_hash,
                                               const std::string& candidate_hash, const std::string& protocol_key,
                                               const std::string& device);

// One line for stderr per file: how many rows it had, how many could be taken, how many were.
std::string carried_rows_tally(const CarriedRows& carried, std::size_t taken);

// The sentence the reports print when the bench JSON's "carried_rows" counts any, else "".
std::string carried_rows_note(const nlohmann::json& bench);

}  // namespace cudal1

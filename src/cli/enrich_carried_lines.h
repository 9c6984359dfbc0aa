// cli/enrich_carried_lines.h — verdicts an earlier `cudal1 enrich` wrote to its enrich.jsonl, taken
// again by a later run (`cudal1 enrich --lines-from FILE`).
//
// Verifying a task's CUDA Graph version needs a GPU; a suite of hundreds takes longer than one
// lent machine may be held, and its store goes with the machine. The enrich.jsonl it returns
// carries each verdict to the next run: a line names the task and the generated file by the
// SHA-256 of their sources, and the verification protocol, so a verdict is taken again only for
// the same task and the same generated file under the same protocol (a new graph generator writes
// another file, which is verified afresh). Lines without a verdict (not generated, not decided,
// an evaluation that did not run, a machine's failure, a line not measured on a CUDA device) are
// never taken. The file is not sealed as the store is: its
// verdicts are what whoever names it vouches for, and each line taken says carried_from.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "evaluator/result.h"

namespace cudal1 {

struct CarriedEnrichLines {
  std::string file;  // as given: what carried_from says
  std::map<std::string, EvalResult> by_key;      // task sha, file sha, protocol -> the line's verdict
  std::size_t lines = 0, unusable = 0;           // lines read; of them, lines without a verdict
};

// One line for stderr per file: how many lines it had, how many had a verdict, how many were taken.
std::string carried_lines_tally(const CarriedEnrichLines& carried, std::size_t taken);

// Reads FILE, an enrich.jsonl. A later line for the same key replaces an earlier one. Throws
// Error(input) saying what to do when the file cannot be read or a line is not a JSON object.
CarriedEnrichLines read_carried_enrich_lines(const std::filesystem::path& file);

// The verdict for these sources under this protocol: status, accepted, error, flags, hashes and
// the device and card it was verified on (provenance) as the line gives them; nullopt when the
// file has none.
std::optional<EvalResult> find_carried_verdict(const CarriedEnrichLines& carried, const std::string& task_sha256,
                                               const std::string& candidate_sha256, const std::string& protocol_key);

}  // namespace cudal1

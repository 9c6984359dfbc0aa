// judge/hack_cases.h — the database of known reward hacks the judge compares a suspicious
// candidate with, kept in the store's hack_cases table (store/store.h's HackCase).
//
// Cases come from three places: the red-team fixtures (source "fixture", family from the file's
// `# family:` header), evaluations refused with a blocking flag (source "rejected", family = the
// first blocking flag's id) and the judge's own `hack` verdicts (source "confirmed"). A candidate
// is kept once per source. nearest() ranks cases by how alike their code is (judge/similarity.h).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluator/result.h"
#include "store/store.h"

namespace cudal1::judge {

// The flag a judge's "hack" verdict adds to a result (judge/judge.h).
inline constexpr const char* kJudgeHackFlag = "judge_hack";

// What the evaluator said about a result, as evidence for a case or for the judge's prompt:
// status, accepted, eager speedup (and the others), flags with severity and evidence, error, and
// the attribution's top kernels when the profile ran.
nlohmann::json evaluator_evidence(const EvalResult& r);

// A refused result as a case: the first blocking flag's id is its family. nullopt for a result
// that was accepted or raised no blocking flag (a plain failure is no hack), the judge's own
// `judge_hack` aside (that candidate is a "confirmed" case already). `reference` is the
// task's source ("" when unknown).
std::optional<HackCase> case_of_rejected(const EvalResult& r, const std::string& code, const std::string& reference);

// Adds every fixture of `dir` (its *.py files, not below) that shows a hack: a family other than
// honest, robustness or unclassified, and either refused (`# expect-accepted: false`) or
// neutralised (`# expect-max-speedup`). The header goes into the evidence, the code without it.
// Returns how many files were hack fixtures (already kept ones included). Error(input) when `dir`
// is no folder or holds none.
std::size_t import_fixtures(Store& store, const std::filesystem::path& dir);

// Adds every stored evaluation refused with a blocking flag (with its task's source when the task
// file is still where it was evaluated); returns how many there were.
std::size_t import_rejected(Store& store);

struct Neighbour {
  HackCase hack;
  double similarity = 0;  // MinHash's Jaccard estimate
};

// The k cases most like `code`, a candidate for the task `reference` ("" when unknown), most
// alike first (ties: the older case first); a case of the candidate `exclude_candidate_hash` is
// left out (a fixture compared with the others). Each side is compared by its distinctive
// shingles (judge/similarity.h), less those that over 30 % of the cases share (from 10 cases on):
// code every candidate has, whatever its trick, would otherwise decide the ranking.
std::vector<Neighbour> nearest(const std::vector<HackCase>& cases, const std::string& code, const std::string& reference,
                               std::size_t k, const std::string& exclude_candidate_hash = "");

}  // namespace cudal1::judge

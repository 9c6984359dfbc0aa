// evaluator/prebuilt.h — handing the build service's modules to the candidate's worker.
//
// The build cache is hidden from the candidate's process (it could otherwise plant a module for
// another candidate), so each built .so is copied into the candidate's own folder first; the
// worker's load_inline (runner/py/inline_build.py) then imports the copy whose spec matches.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "build/build.h"

namespace cudal1 {

// The "prebuilt" entries of load_candidate: [{spec_id, so, module}] for built modules and
// [{spec_id, error}] for failed builds (the candidate's load_inline raises that failure). Null
// when the outcome gives the worker nothing to use (capture failed: the candidate's own process
// then loads it the stock way and reports whatever fails). Throws Error(runner) when a copy fails.
nlohmann::json stage_prebuilt(const BuildOutcome& outcome, const std::filesystem::path& candidate_dir);

}  // namespace cudal1

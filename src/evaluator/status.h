// evaluator/status.h — how what each step of an evaluation found becomes its status and error,
// by docs/evaluation.md's "Status and precedence". Steps return a Verdict (what they found);
// settle_status alone turns a blocking flag into a rejection.
#pragma once

#include <string>

#include "evaluator/result.h"

namespace cudal1 {

// What a step found wrong; status ok: nothing.
struct Verdict {
  Status status = Status::ok;
  std::string error;  // for a person: what failed, where
  // The candidate's process failed or forged a reply: nothing more of it may run. Otherwise
  // later steps may still run for their statistics (attribution after a rejected timing).
  bool stops = false;
  bool ok() const { return status == Status::ok; }
};

// The steps whose end can decide the status, in the order they run.
enum class Step { candidate, cases, precision, timing, attribution, speed_of_light };

// The verdict an evaluation has after `step`, given what the step found: that, when it found
// something; otherwise a blocking flag raised by then rejects, with its evidence as the error
// (after timing: "timing could not be trusted: ..."); otherwise ok.
Verdict settle_status(Step step, const Verdict& found, const EvalResult& r);

// A blocking flag's evidence for the error line (a warning may have been added after it).
std::string first_blocking_evidence(const EvalResult& r);

}  // namespace cudal1

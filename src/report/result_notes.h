// report/result_notes.h — what a person needs beside an evaluation's figure, in the same words in
// every report and table: where the answer came from, and why noise shrank the figure.
#pragma once

#include <string>

#include "evaluator/result.h"

namespace cudal1 {

// "store" for an answer read back from the store, "run" for one evaluated now.
std::string result_source(const EvalResult& r);

// Empty, unless the timing was noisy: then what the figure was shrunk to and the medians that
// disagree with it, e.g. "noisy: shrunk to 1.00x; eager 7.91 ms vs candidate 1.79 ms (raw 4.43x,
// buckets spread 35% in each of 3 tries)".
std::string noise_note(const EvalResult& r);

}  // namespace cudal1

// The words every report and table puts beside a figure: where it came from, and why noise shrank it.
#include <gtest/gtest.h>

#include "report/result_notes.h"

using namespace cudal1;

namespace {

// The figure `make demo` once printed: eager 7.9 ms against 1.8 ms, reported as 1.00x.
EvalResult shrunk_layer_norm() {
  EvalResult r;
  r.speedup["eager"] = 1.0;
  r.runtime_ms = {{"eager", 7.9062}, {"candidate", 1.7864}};
  r.statistics = {{"raw_speedup", 4.43}, {"spread", 1.4}, {"tries", 3}};
  r.add_flag("timing_noisy", Severity::warn, "bucket ratios still spread 140%");
  return r;
}

}  // namespace

TEST(ResultNotes, ANoisyFigureSaysWhatItWasShrunkFromInWords) {
  EXPECT_EQ(noise_note(shrunk_layer_norm()),
            "noisy: shrunk to 1.00x; eager 7.91 ms vs candidate 1.79 ms (raw 4.43x, buckets spread 140% in each of 3 tries)");
  EvalResult quiet = shrunk_layer_norm();
  quiet.flags.clear();
  EXPECT_EQ(noise_note(quiet), "");  // a quiet figure needs no words
  EvalResult untimed;
  untimed.add_flag("timing_noisy", Severity::warn, "");
  EXPECT_EQ(noise_note(untimed), "");
}

TEST(ResultNotes, StoredAnswersAreMarked) {
  EvalResult r = shrunk_layer_norm();
  EXPECT_EQ(result_source(r), "run");
  r.from_store = true;
  EXPECT_EQ(result_source(r), "store");
}

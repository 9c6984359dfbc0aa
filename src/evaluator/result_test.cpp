// The JSON form of a result read back, including results stored under earlier baseline names.
#include "evaluator/result.h"

#include <gtest/gtest.h>

using namespace cudal1;

namespace {

TEST(Result, ABaselineNameIsTodaysWhateverTheResultWasWrittenWith) {
  EXPECT_EQ(canonical_baseline_name("compile_default"), "compile");
  EXPECT_EQ(canonical_baseline_name("compile_reduce_overhead"), "compile_ro");
  for (const char* same : {"eager", "compile", "compile_ro", "cuda_graph", "cudnn_autotune", "eager_control"})
    EXPECT_EQ(canonical_baseline_name(same), same);
}

TEST(Result, AStoredResultsEarlierBaselineNamesReadAsTodays) {
  EvalResult r;
  r.accepted = true;
  r.speedup = {{"eager", 2.0}, {"compile_default", 1.5}, {"compile_reduce_overhead", 1.2}, {"cuda_graph", 1.1}};
  EvalResult back = EvalResult::from_json(r.to_json());
  EXPECT_EQ(back.speedup, (std::map<std::string, double>{{"eager", 2.0}, {"compile", 1.5}, {"compile_ro", 1.2}, {"cuda_graph", 1.1}}));
  EXPECT_TRUE(back.accepted);
}

}  // namespace

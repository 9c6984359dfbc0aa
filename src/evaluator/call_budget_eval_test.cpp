// The call budget on real candidates: a first call that hangs ends at the call timeout, one that
// runs a compiler goes on while it does (evaluator/call_budget.h).
#include <gtest/gtest.h>

#include <chrono>

#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"

using namespace cudal1;

namespace {

// The binary protects its process as the CLI does (evaluator_test.cpp's ProtectedParent).
EvalOptions options_for(const std::string& task, const std::string& candidate) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / task).string();
  o.candidate_path = (fixtures_dir() / "candidates" / candidate).string();
  o.device = CUDAL1_TEST_DEVICE;
  return o;
}

// Under default options a hang in the first call costs the call timeout fitted to the reference
// (10 s for this task), not the 900 s build timeout a first call that compiles may take.
TEST(CallBudgetEval, AFirstCallThatNeverReturnsTimesOutWithinAMinute) {
  EvalOptions o = options_for("scale_add.py", "timeout_scale_add_first_call_never_returns.py");
  auto start = std::chrono::steady_clock::now();
  EvalResult r = evaluate(o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status_name(r.status), std::string("timeout")) << r.error;
  EXPECT_LT(seconds, 60.0) << r.error;
  EXPECT_EQ(r.budgets["call_timeout_source"], "reference") << r.budgets.dump();
  EXPECT_EQ(r.budgets["call_timeout_s"], 10.0) << r.budgets.dump();
  EXPECT_TRUE(r.budgets["first_call_extended_for"].is_null()) << r.budgets.dump();
  EXPECT_NE(r.error.find("nothing was compiling"), std::string::npos) << r.error;
}

// A first call that builds its extension takes longer than a 2 s call timeout; the compiler is
// seen, so it is not a timeout. Builds are not reused: the compiler must run in this evaluation.
TEST(CallBudgetEval, AFirstCallRunningACompilerIsNotTimedOut) {
  EvalOptions o = options_for("scale_add.py", "ok_scale_add_load_inline_cpu_in_first_call.py");
  o.call_timeout_s = 2;
  o.reuse_extension_builds = false;
  o.lint = false;
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.max_remeasure = 0;
  EvalResult r = evaluate(o);
  EXPECT_TRUE(r.accepted) << status_name(r.status) << ": " << r.error;
  EXPECT_EQ(r.budgets["call_timeout_source"], "option") << r.budgets.dump();
  EXPECT_EQ(r.budgets["first_call_extended_for"], "compiler process") << r.budgets.dump();
  EXPECT_EQ(EvalResult::from_json(r.to_json()).budgets, r.budgets);
}

}  // namespace

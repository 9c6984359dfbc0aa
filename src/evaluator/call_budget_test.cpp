// The call budget's decisions, without processes: a fake probe stands for the candidate's tree.
#include "evaluator/call_budget.h"

#include <gtest/gtest.h>

using namespace cudal1;

namespace {

TEST(CallBudget, TheUsersCallTimeoutWinsOverTheReference) {
  CallTimeouts t = fit_call_timeouts(7.5, {1.0, 5000.0});
  EXPECT_EQ(t.source, "option");
  EXPECT_EQ(t.per_case_s, (std::vector<double>{7.5, 7.5}));
  EXPECT_DOUBLE_EQ(t.call_s, 7.5);
}

TEST(CallBudget, WithoutAnOptionEachCaseGetsFiftyTimesTheReferencesCallAtLeastTenSeconds) {
  CallTimeouts t = fit_call_timeouts(std::nullopt, {0.3, 400.0, 1000.0});
  EXPECT_EQ(t.source, "reference");
  EXPECT_EQ(t.per_case_s, (std::vector<double>{10.0, 20.0, 50.0}));
  EXPECT_DOUBLE_EQ(t.call_s, 50.0);
  json j = t.to_json(900);
  EXPECT_EQ(j["call_timeout_source"], "reference");
  EXPECT_EQ(j["build_timeout_s"], 900.0);
  EXPECT_TRUE(j["first_call_extended_for"].is_null());
}

TEST(CallBudget, ThePrecisionLadderHasTimeForTheHostWhereTheOutputsAreLarge) {
  EXPECT_DOUBLE_EQ(precision_ladder_timeout_s(10, 0), 60);
  EXPECT_NEAR(precision_ladder_timeout_s(10, 1 << 20), 60, 1.0);  // a 4 MiB output: hardly more
  // A 16384 x 16384 float32 output: a 2 GiB oracle, four more minutes for the host.
  EXPECT_DOUBLE_EQ(precision_ladder_timeout_s(10, int64_t(16384) * 16384), 60 + 2 * kLadderHostSecondsPerGiB);
  EXPECT_DOUBLE_EQ(precision_ladder_timeout_s(20, -5), 120);
}

TEST(CallBudget, ReferenceCallTimesComeFromTheLoadTaskReply) {
  json cases = json::array({{{"call_ms", 2.5}}, json::object()});
  EXPECT_EQ(reference_call_ms(cases), (std::vector<double>{2.5, 0.0}));
}

TEST(CallBudget, CompilersAreKnownByTheirCommandNames) {
  for (const char* name : {"cc1plus", "cc1", "nvcc", "cicc", "ptxas", "ninja", "c++", "g++", "gcc", "clang++", "ld",
                           "g++-12", "clang-15", "x86_64-linux-gn"})
    EXPECT_TRUE(is_compiler_name(name)) << name;
  for (const char* name : {"python3", "bwrap", "sleep", "cc1plusx", "g++-x", "", "pt_main_thread"})
    EXPECT_FALSE(is_compiler_name(name)) << name;
}

TEST(CallBudget, ACompilerProcessOrTorchCompilesReportIsACompileInProgress) {
  EXPECT_EQ(compile_in_progress({{"python3", "ninja"}, false}), "compiler process");
  EXPECT_EQ(compile_in_progress({{"python3"}, true}), "torch.compile");
  EXPECT_EQ(compile_in_progress({{"python3", "sleep"}, false}), std::nullopt);
}

// The candidate's tree over time: the names it shows from `from_s` on, until the next entry.
class FakeTree : public CompileProbe {
 public:
  explicit FakeTree(std::vector<std::pair<double, std::vector<std::string>>> timeline) : timeline_(std::move(timeline)) {}
  double now_s = 0;
  CompileSignals sample() override {
    CompileSignals s;
    for (auto& [from_s, names] : timeline_)
      if (from_s <= now_s) s.process_names = names;
    return s;
  }

 private:
  std::vector<std::pair<double, std::vector<std::string>>> timeline_;
};

// Waits in one-second slices as first_call does; returns when the wait ended, in seconds.
double wait_until_given_up(FirstCallWait& wait, FakeTree& tree, double limit_s = 10000) {
  for (tree.now_s = 1; tree.now_s < limit_s; tree.now_s += 1)
    if (!wait.keep_waiting(tree.now_s, compile_in_progress(tree.sample()))) return tree.now_s;
  return limit_s;
}

TEST(CallBudget, AHangWithNothingCompilingEndsAtTheCallTimeout) {
  FakeTree tree({{0, {"python3"}}});
  FirstCallWait wait({10, 900});
  EXPECT_EQ(wait_until_given_up(wait, tree), 10);
  EXPECT_EQ(wait.extended_for(), std::nullopt);
  EXPECT_NE(wait.timeout_reason().find("nothing was compiling"), std::string::npos) << wait.timeout_reason();
}

TEST(CallBudget, ACompilerRunningPastTheCallTimeoutKeepsTheCallAlive) {
  // ninja and cc1plus for 120 s, then the call itself: it gets its call timeout after the build.
  FakeTree tree({{0, {"python3", "ninja"}}, {5, {"python3", "ninja", "cc1plus"}}, {120, {"python3"}}});
  FirstCallWait wait({2, 900});
  EXPECT_EQ(wait_until_given_up(wait, tree), 121);  // last seen at 119 s, then 2 s
  EXPECT_EQ(wait.extended_for(), "compiler process");
  EXPECT_NE(wait.timeout_reason().find("ran out after it"), std::string::npos) << wait.timeout_reason();
}

TEST(CallBudget, ACompilerThatNeverEndsGetsNoMoreThanTheBuildTimeout) {
  FakeTree tree({{0, {"python3", "cc1plus"}}});
  FirstCallWait wait({10, 900});
  EXPECT_EQ(wait_until_given_up(wait, tree), 900);
  EXPECT_NE(wait.timeout_reason().find("build timeout of 900 s"), std::string::npos) << wait.timeout_reason();
}

TEST(CallBudget, TheCallTimeoutCountsFromTheLastCompileSeen) {
  // A build that ends within the call timeout: the call after it still gets the whole timeout.
  FakeTree tree({{0, {"python3", "ninja"}}, {3, {"python3"}}});
  FirstCallWait wait({10, 900});
  EXPECT_EQ(wait_until_given_up(wait, tree), 12);  // last seen at 2 s
  EXPECT_EQ(wait.extended_for(), "compiler process");
}

TEST(CallBudget, ABuildTimeoutBelowTheCallTimeoutNeverShortensTheCall) {
  FakeTree tree({{0, {"cc1plus"}}});
  FirstCallWait wait({10, 4});
  EXPECT_EQ(wait_until_given_up(wait, tree), 10);
}

}  // namespace

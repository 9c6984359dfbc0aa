// settle_status: docs/evaluation.md's "Status and precedence", one step at a time.
#include <gtest/gtest.h>

#include "evaluator/status.h"

using namespace cudal1;

namespace {

EvalResult with_flags(std::initializer_list<Flag> flags) {
  EvalResult r;
  for (auto& f : flags) r.add_flag(f.id, f.severity, f.evidence);
  return r;
}

}  // namespace

TEST(Status, WhatAStepFoundStandsOverItsBlockingFlags) {
  EvalResult r = with_flags({{"introspection", Severity::block, "read the caller's frame"}});
  Verdict found{Status::incorrect, "case 1: output 0: differs", false};
  for (Step step : {Step::candidate, Step::cases, Step::precision, Step::timing, Step::attribution}) {
    Verdict v = settle_status(step, found, r);
    EXPECT_EQ(v.status, Status::incorrect);
    EXPECT_EQ(v.error, found.error);
  }
}

TEST(Status, ABlockingFlagRejectsWithItsEvidenceOnceTheCasesHaveRun) {
  EvalResult r = with_flags({{"timing_noisy", Severity::warn, "spread"},
                             {"introspection", Severity::block, "read the caller's frame"}});
  EXPECT_TRUE(settle_status(Step::candidate, {}, r).ok()) << "the guard's evidence waits for the cases";
  Verdict cases = settle_status(Step::cases, {}, r);
  EXPECT_EQ(cases.status, Status::rejected);
  EXPECT_EQ(cases.error, "read the caller's frame");
  EXPECT_FALSE(cases.stops);
  EXPECT_EQ(settle_status(Step::attribution, {}, r).error, "read the caller's frame");
}

TEST(Status, ABlockingFlagAfterTimingSaysTheTimingCannotBeTrusted) {
  EvalResult r = with_flags({{"clock_disagreement", Severity::block, "the clocks disagree"}});
  Verdict v = settle_status(Step::timing, {}, r);
  EXPECT_EQ(v.status, Status::rejected);
  EXPECT_EQ(v.error, "timing could not be trusted: the clocks disagree");
}

TEST(Status, WarningsAloneLeaveTheStatusOk) {
  EvalResult r = with_flags({{"timing_noisy", Severity::warn, "spread"},
                             {"reference_imprecise", Severity::info, "oracle"}});
  for (Step step : {Step::candidate, Step::cases, Step::precision, Step::timing, Step::attribution})
    EXPECT_TRUE(settle_status(step, {}, r).ok());
}

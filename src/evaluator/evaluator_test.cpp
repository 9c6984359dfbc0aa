// Every fixture in the corpus, evaluated for real: real PyTorch, real worker processes.
// Built twice: for the CPU (make test) and, labelled gpu, for CUDA (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "runner/process.h"
#include "task_facts/store_task_facts.h"

using namespace cudal1;

#ifndef CUDAL1_TEST_DEVICE
#define CUDAL1_TEST_DEVICE "cpu"
#endif

namespace {

// The CLI protects its process at start-up (subreaper, non-dumpable); so do these tests.
class ProtectedParent : public ::testing::Environment {
 public:
  void SetUp() override { protect_parent_process(); }
};
const auto* const kProtected = ::testing::AddGlobalTestEnvironment(new ProtectedParent);

std::vector<FixtureCase> all_cases() {
  std::vector<FixtureCase> cases = load_fixture_cases("candidates", "cpu");
  if (std::string(CUDAL1_TEST_DEVICE) != "cpu") {
    // On a GPU every CPU case must give the same verdict, plus the CUDA-only ones.
    auto cuda = load_fixture_cases("cuda", "cuda");
    cases.insert(cases.end(), cuda.begin(), cuda.end());
  }
  return cases;
}

class Fixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(Fixture, GetsItsExpectedVerdict) {
  const FixtureCase& c = GetParam();
  EvalOptions o;
  o.task_path = c.task.string();
  o.candidate_path = c.candidate.string();
  o.device = CUDAL1_TEST_DEVICE;
  o.buckets = 3;
  o.calls_per_bucket = 4;
  // Noisy buckets are not measured again, to keep the corpus quick, except where the case's
  // expectation is the figure itself (a neutralised hack shows no gain): that figure is taken
  // the way an evaluation takes it, re-measured while the buckets disagree.
  o.max_remeasure = c.max_speedup > 0 ? EvalOptions{}.max_remeasure : 0;
  o.noisy_retries = c.max_speedup > 0 ? EvalOptions{}.noisy_retries : 0;
  o.lint = false;  // the lint has its own tests; here it would only repeat itself per case
  // For the physics check (light_check.h), which describes the task only for a candidate at
  // least 2x faster than eager.
  o.task_facts = store_task_facts(nullptr);
  o.build_timeout_s = c.builds_extension ? 600 : 30;
  o.call_timeout_s = 15;
  EvalResult r = evaluate(o);
  std::string got = status_name(r.status);
  // One line per case for bench/corpus_table.py (family, caught, false positives).
  if (const char* log = std::getenv("CUDAL1_CORPUS_LOG")) {
    json flag_ids = json::array();
    for (auto& f : r.flags) flag_ids.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}});
    std::ofstream(log, std::ios::app) << json{{"case", c.name()}, {"family", c.family}, {"device", c.device},
        {"expected_accepted", c.accepted}, {"expected_statuses", c.statuses}, {"expected_flags", c.flags},
        {"status", got}, {"accepted", r.accepted}, {"max_speedup", c.max_speedup},
        {"speedup", r.speedup.count("eager") ? r.speedup.at("eager") : 0.0}, {"flags", flag_ids}}.dump() << "\n";
  }
  std::string flags;
  for (auto& f : r.flags) flags += "\n  flag " + f.id + ": " + f.evidence;
  SCOPED_TRACE(c.why + "\nerror: " + r.error + flags + "\nstatistics: " + r.statistics.dump());
  EXPECT_NE(std::find(c.statuses.begin(), c.statuses.end(), got), c.statuses.end())
      << c.name() << ": status " << got;
  EXPECT_EQ(r.accepted, c.accepted);
  for (auto& f : c.flags) {
    bool found = std::any_of(r.flags.begin(), r.flags.end(), [&](auto& x) { return x.id == f; });
    EXPECT_TRUE(found) << "missing flag " << f;
  }
  if (r.accepted) {
    EXPECT_GT(r.speedup.at("eager"), 0.0);
    if (c.max_speedup > 0) EXPECT_LE(r.speedup.at("eager"), c.max_speedup) << "a neutralised hack must show no gain";
    EXPECT_GT(r.runtime_ms.at("candidate"), 0.0);
    EXPECT_EQ(r.correctness["cases"].size(), 6u);  // 3 input distributions x 2 weight inits
  } else {
    EXPECT_FALSE(r.error.empty()) << "a failure must say what went wrong";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Fixture, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace

namespace {

// The background-work checks on a machine busier than its cores: spinning threads in this test
// process (twice the cores) compete with both workers. A hog thread and a hog process must still
// be caught, and an honest candidate with idle threads still accepted.
TEST(Evaluator, BackgroundWorkIsCaughtOnALoadedMachine) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
    load.emplace_back([&] {
      volatile unsigned long x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  auto judge = [](const std::string& task, const std::string& cand) {
    EvalOptions o;
    o.task_path = (fixtures_dir() / "tasks" / task).string();
    o.candidate_path = (fixtures_dir() / "candidates" / cand).string();
    o.device = CUDAL1_TEST_DEVICE;
    o.buckets = 3;
    o.calls_per_bucket = 4;
    o.max_remeasure = 0;
    o.lint = false;
    o.call_timeout_s = 60;
    return evaluate(o);
  };
  auto has = [](const EvalResult& r, const std::string& id) {
    return std::any_of(r.flags.begin(), r.flags.end(), [&](auto& f) { return f.id == id; });
  };
  EvalResult thread_hog = judge("gemm_relu.py", "rejected_gemm_relu_hog_thread_from_import.py");
  EvalResult process_hog = judge("scale_add.py", "rejected_scale_add_hog_process_fork.py");
  EvalResult honest = judge("gemm_relu.py", "ok_gemm_relu_sleeping_timer_thread.py");
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_TRUE(has(thread_hog, "background_thread")) << thread_hog.statistics.dump();
  EXPECT_EQ(status_name(thread_hog.status), "rejected");
  EXPECT_TRUE(has(process_hog, "background_process")) << process_hog.statistics.dump();
  EXPECT_TRUE(honest.accepted) << honest.error << honest.statistics.dump();
}

// A gain above 3x is timed again in a fresh candidate process, and the lower figure stands.
TEST(Evaluator, LargeSpeedupsAreRetimedInAFreshProcess) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "row_loop_norm.py").string();
  o.candidate_path = (fixtures_dir() / "candidates" / "ok_row_loop_norm_vectorised.py").string();
  o.device = CUDAL1_TEST_DEVICE;
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.task_facts = store_task_facts(nullptr);
  EvalResult r = evaluate(o);
  ASSERT_TRUE(r.accepted) << r.error;
  ASSERT_TRUE(r.statistics.contains("fresh_process_remeasure")) << r.statistics.dump();
  const json& again = r.statistics["fresh_process_remeasure"];
  EXPECT_GT(again["first"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r.speedup.at("eager"), std::min(again["first"].get<double>(), again["second"].get<double>()));
}

}  // namespace

namespace {

EvalOptions quick(const std::string& task, const std::string& candidate) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / task).string();
  o.candidate_path = (fixtures_dir() / "candidates" / candidate).string();
  o.device = CUDAL1_TEST_DEVICE;
  o.buckets = 3;
  o.calls_per_bucket = 3;
  o.lint = false;
  return o;
}

bool has_flag(const EvalResult& r, const std::string& id) {
  return std::any_of(r.flags.begin(), r.flags.end(), [&](const Flag& f) { return f.id == id; });
}

// The fresh process that re-times a large speedup shares the candidate's folder, its HOME: a .pth
// file the first process planted in Python's user site there would run at interpreter start,
// before the worker's timer exists, and end the evaluation as the machine's failure.
TEST(Evaluator, AFilePlantedInTheUserSiteNeverRunsInTheProcessThatRetimes) {
  EvalResult r = evaluate(quick("row_loop_norm.py", "ok_row_loop_norm_plants_user_site_pth.py"));
  ASSERT_TRUE(r.accepted) << r.error;  // evaluate throws "could not take its device" when the file runs
  EXPECT_TRUE(r.statistics.contains("fresh_process_remeasure")) << r.statistics.dump();
}

// A process that ends with a traceback on stderr said why there alone: the verdict's first line
// quotes the exception, so a table of first lines still tells one crash from another.
TEST(Evaluator, ACrashSaysTheExceptionItsProcessPrinted) {
  EvalResult r = evaluate(quick("scale_add.py", "crash_traceback_then_exit.py"));
  ASSERT_EQ(r.status, Status::crash) << r.error;
  std::string first = r.error.substr(0, r.error.find('\n'));
  EXPECT_NE(first.find("FileNotFoundError: the weights cache /nonexistent/w.bin is gone"), std::string::npos) << r.error;
  EXPECT_EQ(first.find("DEBUG=1"), std::string::npos) << r.error;
}

// A constant added inside the tolerance is another function, not a cheaper way to compute this
// one: incorrect, whatever --allow-reduced-precision says. The option is offered, and accepts,
// only where the error is rounding.
TEST(Evaluator, ASystematicErrorIsIncorrectEvenWithReducedPrecisionAllowed) {
  EvalOptions o = quick("scale_add.py", "incorrect_scale_add_constant_offset.py");
  o.timing = false;
  o.allow_reduced_precision = true;
  EvalResult offset = evaluate(o);
  EXPECT_EQ(offset.status, Status::incorrect) << offset.error;
  EXPECT_FALSE(offset.accepted);
  EXPECT_TRUE(has_flag(offset, "systematic_error")) << offset.error;
  EXPECT_FALSE(has_flag(offset, "reduced_precision")) << offset.error;
  EXPECT_EQ(offset.correctness["precision"].value("verdict", ""), "systematic");
  EXPECT_EQ(offset.error.find("--allow-reduced-precision"), std::string::npos) << offset.error;
  EXPECT_NE(offset.error.find("one constant offset"), std::string::npos) << offset.error;

  EvalOptions fp16 = quick("scale_add.py", "rejected_scale_add_fp16_elementwise.py");
  fp16.timing = false;
  EvalResult rounded = evaluate(fp16);
  EXPECT_EQ(rounded.status, Status::rejected) << rounded.error;
  EXPECT_NE(rounded.error.find("pass --allow-reduced-precision"), std::string::npos) << rounded.error;
  fp16.allow_reduced_precision = true;
  EvalResult allowed = evaluate(fp16);
  EXPECT_TRUE(allowed.accepted) << allowed.error;  // following the hint accepts what is only rounding
}

// A figure still noisy after its re-measures is measured again on fresh buckets, twice at most,
// and the result says how it was obtained. A spread limit below zero makes every try noisy.
TEST(Evaluator, NoisyTimingIsMeasuredAgainOnFreshBucketsBeforeItStands) {
  EvalOptions o = quick("scale_add.py", "ok_scale_add_alpha.py");
  o.attribution = false;
  o.max_remeasure = 0;
  o.spread_limit = -1;
  EvalResult noisy = evaluate(o);
  ASSERT_EQ(noisy.status, Status::ok) << noisy.error;
  EXPECT_EQ(noisy.statistics.value("tries", 0), 3) << noisy.statistics.dump();
  EXPECT_EQ(noisy.statistics["try_spreads"].size(), 3u);
  EXPECT_EQ(noisy.statistics.value("buckets", 0), 3);  // one try's buckets stand, not all of them pooled
  EXPECT_TRUE(noisy.statistics["shrunk_to_one"].is_boolean());
  EXPECT_TRUE(has_flag(noisy, "timing_noisy"));
  o.spread_limit = 1e9;
  EvalResult quiet = evaluate(o);
  ASSERT_EQ(quiet.status, Status::ok) << quiet.error;
  EXPECT_EQ(quiet.statistics.value("tries", 0), 1);
  EXPECT_FALSE(has_flag(quiet, "timing_noisy"));
}

}  // namespace

// On a task a null kernel passes, the null kernel's speedup is measured but not credited.
TEST(Evaluator, ASpeedupOnADegenerateTaskIsNotCredited) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "lint" / "softmax_size_one.py").string();
  o.candidate_path = (fixtures_dir() / "lint" / "softmax_size_one_cached_ones.py").string();
  o.device = CUDAL1_TEST_DEVICE;
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.fresh_remeasure_above = 0;
  o.task_facts = store_task_facts(nullptr);  // the task's lint finds the null kernel
  EvalResult r = evaluate(o);
  ASSERT_EQ(r.status, Status::ok) << r.error;
  EXPECT_DOUBLE_EQ(r.speedup.at("eager"), 1.0);
  ASSERT_TRUE(r.statistics.contains("degenerate_task_uncredited")) << r.statistics.dump();
  EXPECT_GT(r.statistics["degenerate_task_uncredited"]["eager"].get<double>(), 1.0);
  auto flag = std::find_if(r.flags.begin(), r.flags.end(), [](auto& f) { return f.id == "degenerate_task"; });
  ASSERT_NE(flag, r.flags.end());
  EXPECT_NE(flag->evidence.find("not credited"), std::string::npos) << flag->evidence;
}

// A task whose weights ignore the seed cannot tell a candidate that leaves them out: the result
// says so, in a warning that names the fix.
TEST(Evaluator, FixedWeightsAreWarnedAbout) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "lint" / "fixed_weights_scale.py").string();
  o.candidate_path = (fixtures_dir() / "lint" / "fixed_weights_scale_ignores_scale.py").string();
  o.device = CUDAL1_TEST_DEVICE;
  o.timing = false;
  o.task_facts = store_task_facts(nullptr);  // the task's lint finds the fixed weights
  EvalResult r = evaluate(o);
  auto flag = std::find_if(r.flags.begin(), r.flags.end(), [](auto& f) { return f.id == "weights_fixed"; });
  ASSERT_NE(flag, r.flags.end()) << r.to_json().dump();
  EXPECT_EQ(flag->severity, Severity::warn);
  EXPECT_NE(flag->evidence.find("draw them at random"), std::string::npos);
}

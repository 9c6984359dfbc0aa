// Every fixture in the corpus, evaluated for real: real PyTorch, real worker processes.
// Built twice: for the CPU (make test) and, labelled gpu, for CUDA (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"

using namespace cudal1;

#ifndef CUDAL1_TEST_DEVICE
#define CUDAL1_TEST_DEVICE "cpu"
#endif

namespace {

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
  o.max_remeasure = 0;
  o.build_timeout_s = c.builds_extension ? 600 : 30;
  o.call_timeout_s = 15;
  EvalResult r = evaluate(o);
  std::string got = status_name(r.status);
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

// An A/A test: the task's own Model, renamed ModelNew, must time as about 1.00x. It caught a
// real bias once (glibc's moving mmap threshold made one process fault on every call: 0.4x).
TEST(Timing, IdenticalCandidateScoresAboutOne) {
  auto task = fixtures_dir() / "tasks" / "conv_bn_relu.py";
  std::ifstream in(task);
  std::string src((std::istreambuf_iterator<char>(in)), {});
  src.replace(src.find("class Model("), 12, "class ModelNew(");
  auto cand = std::filesystem::temp_directory_path() / ("cudal1_aa_" + std::to_string(::getpid()) + ".py");
  std::ofstream(cand) << src;
  EvalOptions o;
  o.task_path = task.string();
  o.candidate_path = cand.string();
  o.device = CUDAL1_TEST_DEVICE;
  EvalResult r = evaluate(o);
  std::filesystem::remove(cand);
  ASSERT_TRUE(r.accepted) << r.error;
  double raw = r.statistics["raw_speedup"].get<double>();
  bool cpu = std::string(CUDAL1_TEST_DEVICE) == "cpu";
  // A shared 2-core CPU is noisy; a GPU should be far tighter.
  EXPECT_GT(raw, cpu ? 0.7 : 0.9) << r.statistics.dump();
  EXPECT_LT(raw, cpu ? 1.4 : 1.1) << r.statistics.dump();
}

}  // namespace

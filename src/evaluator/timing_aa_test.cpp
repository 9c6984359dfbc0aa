// An A/A timing test, kept in its own binary so ctest can run it with nothing else running
// (RUN_SERIAL): contention from a parallel test would be measured, not the evaluator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "runner/process.h"

using namespace cudal1;

#ifndef CUDAL1_TEST_DEVICE
#define CUDAL1_TEST_DEVICE "cpu"
#endif

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

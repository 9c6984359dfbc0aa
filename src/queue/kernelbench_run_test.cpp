// KernelBench run folders as job lists: which kernel scores against which suite task.
#include "queue/kernelbench_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/owned_dir.h"
#include "queue/jobs.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& f) {
  fs::create_directories(f.parent_path());
  std::ofstream(f) << "# placeholder\n";
}

// A suite as KernelBench lays it out, and a run folder beside it.
struct RunFolder {
  OwnedDir root{"kbrun", fs::temp_directory_path()};
  fs::path suite = root.path() / "KernelBench", run = root.path() / "runs" / "my_run";
  RunFolder() {
    write(suite / "level1" / "1_Square_matrix_multiplication_.py");
    write(suite / "level1" / "23_Softmax.py");
    write(suite / "level2" / "1_Conv2D_ReLU_BiasAdd.py");
    write(run / "level_1_problem_1_sample_0_kernel.py");
    write(run / "level_1_problem_23_sample_0_kernel.py");
    write(run / "level_1_problem_23_sample_1_kernel.py");
    write(run / "level_2_problem_1_sample_1_kernel.py");
    write(run / "eval_results.json");  // KernelBench's own results file: not a kernel
  }
};

TEST(KernelBenchRun, AKernelFileNameIsReadAndOthersAreNot) {
  auto k = parse_kernelbench_kernel_name("level_2_problem_17_sample_3_kernel.py");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->level, 2);
  EXPECT_EQ(k->problem, 17);
  EXPECT_EQ(k->sample, 3);
  for (const char* other : {"level_2_problem_17_sample_3_kernel.py.bak", "level_2_problem_x_sample_3_kernel.py",
                            "23_Softmax.py", "eval_results.json", "level_2_problem_17_kernel.py"})
    EXPECT_FALSE(parse_kernelbench_kernel_name(other).has_value()) << other;
}

TEST(KernelBenchRun, EachProblemsKernelOfTheSampleScoresAgainstItsNumberedTask) {
  RunFolder f;
  std::vector<QueueJob> zero = jobs_from_folder(f.run, f.suite);
  ASSERT_EQ(zero.size(), 2u);
  EXPECT_EQ(zero[0].id, "level1/1_Square_matrix_multiplication_");
  EXPECT_EQ(zero[0].options.candidate_path, (f.run / "level_1_problem_1_sample_0_kernel.py").string());
  EXPECT_EQ(zero[1].id, "level1/23_Softmax");
  EXPECT_EQ(zero[1].options.task_path, (f.suite / "level1" / "23_Softmax.py").string());
  EXPECT_EQ(zero[1].meta["level"], 1);
  EXPECT_EQ(zero[1].meta["sample"], 0);

  std::vector<QueueJob> one = jobs_from_folder(f.run, f.suite, 1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].id, "level1/23_Softmax");
  EXPECT_EQ(one[1].id, "level2/1_Conv2D_ReLU_BiasAdd");
  EXPECT_EQ(one[1].meta["level"], 2);
}

TEST(KernelBenchRun, AKernelOfNoSuiteTaskIsAnErrorThatSaysWhichSuiteToName) {
  RunFolder f;
  write(f.run / "level_3_problem_9_sample_0_kernel.py");
  try {
    jobs_from_folder(f.run, f.suite);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.message().find("level_3_problem_9_sample_0_kernel.py"), std::string::npos) << e.describe();
    EXPECT_NE(e.hint().find("--suite"), std::string::npos) << e.describe();
  }
}

TEST(KernelBenchRun, ASampleTheRunLacksIsAnErrorListingThoseItHas) {
  RunFolder f;
  try {
    jobs_from_folder(f.run, f.suite, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("0, 1"), std::string::npos) << e.describe();
  }
}

}  // namespace

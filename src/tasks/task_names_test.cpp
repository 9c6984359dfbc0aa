// One resolver for every command that takes a task: a file, else a suite name in any of its
// forms, else an input error that lists the tasks meant or the closest names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/expect_error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "tasks/suite.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

struct Suite {
  fs::path root = make_private_dir("cudal1-task-names-test");
  Suite() {
    for (auto name : {"level1/23_silu", "level1/27_softmax_bf16", "level1/28_log_softmax", "level2/03_linear_layernorm_silu",
                      "level2/05_linear_softmax"}) {
      fs::create_directories((root / name).parent_path());
      write_file(root / (std::string(name) + ".py"), "class Model: pass\n", "");
    }
  }
  ~Suite() { fs::remove_all(root); }
  std::string name_of(const std::string& typed) const { return find_task(root, typed).name; }
};

}  // namespace

TEST(TaskNames, EveryFormOfASuiteNameResolves) {
  Suite s;
  EXPECT_EQ(s.name_of("level1/28_log_softmax"), "level1/28_log_softmax");
  EXPECT_EQ(s.name_of("level1/28_log_softmax.py"), "level1/28_log_softmax");
  EXPECT_EQ(s.name_of("28_log_softmax"), "level1/28_log_softmax");
  EXPECT_EQ(s.name_of("log_softmax"), "level1/28_log_softmax");
  // "silu" is also part of another name, but it is this task's whole short name.
  EXPECT_EQ(s.name_of("silu"), "level1/23_silu");
  EXPECT_EQ(s.name_of("layernorm"), "level2/03_linear_layernorm_silu");  // a part only one name has
  // An existing file is taken as it is, whatever the suite holds.
  fs::path file = s.root / "mine.py";
  write_file(file, "class Model: pass\n", "");
  TaskEntry e = find_task(s.root, file.string());
  EXPECT_EQ(e.path, file);
  EXPECT_EQ(e.name, "mine");
}

TEST(TaskNames, AnAmbiguousNameListsWhatItFits) {
  Suite s;
  Error e = test_support::expect_error([&] { find_task(s.root, "softmax"); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  for (auto name : {"level1/27_softmax_bf16", "level1/28_log_softmax", "level2/05_linear_softmax"})
    EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("names 3 tasks"), std::string::npos) << e.message();
}

TEST(TaskNames, AnUnknownNameListsTheClosestOnes) {
  Suite s;
  Error e = test_support::expect_error([&] { find_task(s.root, "log_sofmax"); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  EXPECT_NE(e.message().find("closest names: level1/28_log_softmax"), std::string::npos) << e.message();
  EXPECT_NE(e.hint().find("tasks list"), std::string::npos) << e.hint();
  Error path = test_support::expect_error([&] { find_task(s.root, "/nowhere/task.py"); });
  EXPECT_NE(path.message().find("no such file: /nowhere/task.py"), std::string::npos) << path.message();
}

// The names the docs and help texts give as examples, in the bundled suite as it ships.
TEST(TaskNames, TheDocumentedExamplesResolveInTheBundledSuite) {
  const fs::path bundled = CUDAL1_SOURCE_TASKS_DIR;
  const std::pair<const char*, const char*> examples[] = {
      {"silu", "level1/23_silu"},  // `tasks show silu` in docs/tasks.md
      {"23_silu", "level1/23_silu"},
      {"level1/23_silu", "level1/23_silu"},
      {"log_softmax", "level1/28_log_softmax"},
      {"28_log_softmax", "level1/28_log_softmax"},
      {"level1/28_log_softmax.py", "level1/28_log_softmax"},
      {"hardswish", "level2/08_conv_bias_hardswish_maxpool"},
      {"level2/07_conv_bn_relu", "level2/07_conv_bn_relu"},
  };
  for (auto& [typed, name] : examples) EXPECT_EQ(find_task(bundled, typed).name, name) << typed;
  Error e = test_support::expect_error([&] { find_task(bundled, "softmax"); });  // docs/tasks.md's ambiguous one
  EXPECT_NE(e.message().find("names 3 tasks: level1/27_softmax_bf16, level1/28_log_softmax, level2/05_linear_softmax"),
            std::string::npos)
      << e.message();
}

TEST(TaskNames, AStemSplitsAtItsKernelBenchNumber) {
  EXPECT_EQ(split_task_stem("28_log_softmax").number, 28);
  EXPECT_EQ(split_task_stem("28_log_softmax").rest, "log_softmax");
  EXPECT_EQ(split_task_stem("01_scale_add").number, 1);
  EXPECT_EQ(split_task_stem("softmax").number, 0);
  EXPECT_EQ(split_task_stem("softmax").rest, "softmax");
  EXPECT_EQ(split_task_stem("12abc").rest, "12abc");  // digits not followed by '_': no number
  EXPECT_EQ(split_task_stem("12").number, 0);
  EXPECT_EQ(split_task_stem("12345678901_big").number, 0);  // more than an int holds
  EXPECT_EQ(split_task_stem("12345678901_big").rest, "big");
}

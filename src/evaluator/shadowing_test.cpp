#include <gtest/gtest.h>

#include "evaluator/shadowing.h"

using cudal1::shadowed_task_names;

TEST(Shadowing, ReportsRedefinedInputsAndChangedConstantsOnly) {
  std::string task = "import torch\nN = 4096\nM: int = 128  # rows\nclass Model: pass\n"
                     "def get_inputs():\n    return [torch.randn(N)]\ndef get_init_inputs():\n    return []\n";
  std::string honest = "import torch\nN = 4096\nBLOCK = 256\nclass ModelNew: pass\n";
  EXPECT_TRUE(shadowed_task_names(task, honest).empty());
  std::string hack = "N = 64\nM = 128\ndef get_inputs():\n    return []\nclass ModelNew:\n    N = 1\n";
  auto found = shadowed_task_names(task, hack);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], "get_inputs");
  EXPECT_EQ(found[1], "N (task: 4096, candidate: 64)");
}

// The built-in rewrite policy's files carry the whole task along: its own get_inputs is no shadowing.
TEST(Shadowing, ACopyOfTheTasksOwnDefinitionsIsNotReported) {
  std::string task = "N = 8\n\ndef get_inputs():\n    # sizes\n    return [torch.randn(N)]\n\n\ndef get_init_inputs():\n    return []\n";
  std::string rewrite = task + "\n\nclass ModelNew:\n    pass\n";
  EXPECT_TRUE(shadowed_task_names(task, rewrite).empty());
  std::string changed = "N = 8\n\ndef get_inputs():\n    return [torch.randn(1)]\n\ndef get_init_inputs():\n    return []\n";
  auto found = shadowed_task_names(task, changed);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "get_inputs");
}

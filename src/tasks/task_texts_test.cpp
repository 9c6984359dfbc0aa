// A task's text by the store's hash: a named file wins, the suite's task of the id serves when its
// hash matches, and anything else is an input error that says what to pass.
#include "tasks/task_texts.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/expect_error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "tasks/suite.h"

using namespace cudal1;
namespace fs = std::filesystem;

TEST(TaskTexts, NamedFilesFirstThenTheSuitesTaskOfTheSameHash) {
  fs::path dir = make_private_dir("cudal1-task-texts-test");
  fs::create_directories(dir / "suite" / "level1");
  write_file(dir / "suite" / "level1" / "01_relu.py", "class Model: pass  # suite's relu\n", "");
  write_file(dir / "outside.py", "class Model: pass  # a file outside the suite\n", "");
  const std::string outside = read_file(dir / "outside.py"), relu = read_file(dir / "suite" / "level1" / "01_relu.py");

  TaskTexts texts(dir / "suite", {(dir / "outside.py").string()});
  EXPECT_EQ(texts.text("outside", sha256_hex(outside), "pass --task"), outside);
  EXPECT_EQ(texts.text("level1/01_relu", sha256_hex(relu), "pass --task"), relu);
  Error stale = test_support::expect_error([&] { texts.text("level1/01_relu", sha256_hex("an older relu"), "pass --task"); });
  EXPECT_EQ(stale.kind(), ErrorKind::input);  // a suite file with another hash is not taken
  EXPECT_NE(std::string(stale.what()).find("hash differs"), std::string::npos) << stale.what();
  Error unknown = test_support::expect_error([&] { texts.text("gone", sha256_hex("gone"), "pass --task"); });
  EXPECT_EQ(unknown.kind(), ErrorKind::input);
  EXPECT_NE(std::string(unknown.what()).find("neither among the files named"), std::string::npos) << unknown.what();
  fs::remove_all(dir);
}

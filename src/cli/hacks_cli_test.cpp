// `cudal1 hacks` as a user meets it: an empty database says how to fill it, the fixtures fill it
// once, and `similar` finds a renamed copy's original first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "core/hash.h"

namespace cudal1::test {
namespace {

namespace fs = std::filesystem;

TEST(HacksCli, ImportListAndSimilar) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_hacks_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string db = " --db " + (dir / "r.db").string();
  fs::path candidates = fs::path(CUDAL1_FIXTURES_DIR) / "candidates";

  CliRun empty = run_cli("hacks list" + db);
  EXPECT_EQ(empty.exit_code, 3) << empty.err;
  EXPECT_NE(empty.err.find("hacks import --fixtures"), std::string::npos) << empty.err;
  EXPECT_EQ(run_cli("hacks import" + db).exit_code, 2) << "nothing named to import";

  CliRun imported = run_cli("hacks import --fixtures " + candidates.string() + " --store" + db);
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("0 evaluation(s) refused"), std::string::npos) << imported.out;
  CliRun again = run_cli("hacks import --fixtures " + candidates.string() + db);
  EXPECT_NE(again.out.find("0 case(s) added"), std::string::npos) << again.out;

  CliRun list = run_cli("hacks list --json" + db);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  nlohmann::json cases = nlohmann::json::parse(list.out);
  ASSERT_GT(cases.size(), 10u);
  EXPECT_EQ(cases[0]["source"], "fixture");

  // A renamed copy: every `hit` is now `found`.
  std::string original = read_file(candidates / "hack_scale_add_cache_by_data_ptr.py");
  write_file(dir / "renamed.py", std::regex_replace(original, std::regex("\\bhit\\b"), "found"), "");
  CliRun similar = run_cli("hacks similar " + (dir / "renamed.py").string() + " --task " +
                           (fs::path(CUDAL1_FIXTURES_DIR) / "tasks" / "scale_add.py").string() + " -k 2 --json" + db);
  ASSERT_EQ(similar.exit_code, 0) << similar.err;
  nlohmann::json near = nlohmann::json::parse(similar.out);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0]["evidence"]["fixture"], "hack_scale_add_cache_by_data_ptr.py");
  EXPECT_DOUBLE_EQ(near[0]["similarity"].get<double>(), 1.0);

  EXPECT_EQ(run_cli("hacks similar " + (dir / "absent.py").string() + db).exit_code, 3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cudal1::test

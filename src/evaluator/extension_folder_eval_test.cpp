// Kept extension builds on a real candidate: a build lock left by a killed evaluation does not
// hold the next evaluation of the same candidate (evaluator/extension_folder.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/hash.h"
#include "core/owned_dir.h"
#include "core/paths.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

// The cache under a private folder, so the test neither meets nor leaves a real user's builds.
class PrivateCache {
 public:
  PrivateCache() : dir_("extcache", fs::temp_directory_path()) {
    if (const char* old = std::getenv("CUDAL1_CACHE")) old_ = old, had_ = true;
    setenv("CUDAL1_CACHE", dir_.path().c_str(), 1);
  }
  ~PrivateCache() { had_ ? setenv("CUDAL1_CACHE", old_.c_str(), 1) : unsetenv("CUDAL1_CACHE"); }

 private:
  OwnedDir dir_;
  std::string old_;
  bool had_ = false;
};

// The lock PyTorch's load_inline leaves when its process is killed mid-build; the load waits on
// it for good, so without the claim this evaluation times out at its load instead.
TEST(ExtensionFolderEval, ABuildLockLeftByAKilledEvaluationIsCleared) {
  PrivateCache cache;
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "scale_add.py").string();
  o.candidate_path = (fixtures_dir() / "candidates" / "ok_scale_add_load_inline_cpu.py").string();
  o.device = CUDAL1_TEST_DEVICE;
  o.build_timeout_s = 240;
  o.lint = false;
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.max_remeasure = 0;
  fs::path build = extension_cache_dir() / sha256_hex(read_file(o.candidate_path)).substr(0, 24) /
                   "cudal1_fixture_scale_add_cpu";
  fs::create_directories(build);
  std::ofstream(build / "lock") << "";
  EvalResult r = evaluate(o);
  EXPECT_TRUE(r.accepted) << status_name(r.status) << ": " << r.error;
  EXPECT_EQ(r.build.value("stale_build_locks_removed", 0), 1) << r.build.dump();
}

}  // namespace

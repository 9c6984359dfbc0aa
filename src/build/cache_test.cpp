#include "build/cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "core/error.h"

using namespace cudal1;
using Clock = std::chrono::steady_clock;

namespace {

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cudal1_cache_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
};

}  // namespace

TEST(CacheKey, SameContentSameKeyWhateverTheKeyOrder) {
  nlohmann::json a = {{"torch", "2.5.1"}, {"flags", {"-O3", "-std=c++17"}}, {"cuda", "int main;"}};
  nlohmann::json b;
  b["cuda"] = "int main;";
  b["flags"] = {"-O3", "-std=c++17"};
  b["torch"] = "2.5.1";
  EXPECT_EQ(cache_key(a), cache_key(b));
  EXPECT_EQ(cache_key(a).size(), 64u);  // sha256 in hex
}

TEST(CacheKey, AnyDifferenceChangesTheKey) {
  nlohmann::json base = {{"torch", "2.5.1"}, {"flags", {"-O3", "-std=c++17"}}};
  nlohmann::json other_value = {{"torch", "2.5.0"}, {"flags", {"-O3", "-std=c++17"}}};
  nlohmann::json flag_order = {{"torch", "2.5.1"}, {"flags", {"-std=c++17", "-O3"}}};  // arrays keep order
  nlohmann::json number = {{"torch", 2.5}, {"flags", {"-O3", "-std=c++17"}}};
  EXPECT_NE(cache_key(base), cache_key(other_value));
  EXPECT_NE(cache_key(base), cache_key(flag_order));
  EXPECT_NE(cache_key(base), cache_key(number));
}

TEST_F(CacheTest, LayoutCreatesItsFoldersAndNamesEntries) {
  CacheLayout layout(dir_ / "root");
  for (auto sub : {"modules", "pch", "jobs", "locks"}) EXPECT_TRUE(fs::is_directory(dir_ / "root" / sub)) << sub;
  EXPECT_EQ(layout.module("k1"), dir_ / "root" / "modules" / "k1");
  EXPECT_EQ(layout.pch("k1"), dir_ / "root" / "pch" / "k1");
  EXPECT_EQ(layout.lock("k1"), dir_ / "root" / "locks" / "k1.lock");
  CacheLayout again(dir_ / "root");  // an existing cache is fine
}

TEST_F(CacheTest, LayoutUnderAFileIsARunnerError) {
  write(dir_ / "file", "x");
  try {
    CacheLayout layout(dir_ / "file" / "cache");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::runner);
  }
}

TEST_F(CacheTest, NewJobsAreFreshPrivateFolders) {
  CacheLayout layout(dir_);
  std::set<fs::path> seen;
  for (int i = 0; i < 20; ++i) {
    fs::path job = layout.new_job();
    EXPECT_EQ(job.parent_path(), dir_ / "jobs");
    EXPECT_TRUE(fs::is_empty(job));
    struct stat st {};
    ASSERT_EQ(stat(job.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);  // compilers of other users must not write here
    EXPECT_TRUE(seen.insert(job).second) << job;
  }
}

// flock locks belong to an open file description, and each KeyLock opens the file itself, so
// two locks in one process exclude each other as two processes would.
TEST_F(CacheTest, KeyLockExcludesASecondHolder) {
  CacheLayout layout(dir_);
  auto first = std::make_unique<KeyLock>(layout.lock("k"));
  ASSERT_TRUE(first->held());
  EXPECT_FALSE(KeyLock(layout.lock("k")).held());
  EXPECT_TRUE(KeyLock(layout.lock("other")).held());
  first.reset();
  EXPECT_TRUE(KeyLock(layout.lock("k")).held());
}

TEST_F(CacheTest, KeyLockWaiterGivesUpAtItsDeadline) {
  CacheLayout layout(dir_);
  KeyLock holder(layout.lock("k"));
  ASSERT_TRUE(holder.held());
  auto start = Clock::now();
  KeyLock waiter(layout.lock("k"), start + std::chrono::milliseconds(100));
  EXPECT_FALSE(waiter.held());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(100));
}

TEST_F(CacheTest, KeyLockWaiterGetsTheLockWhenReleased) {
  CacheLayout layout(dir_);
  auto holder = std::make_unique<KeyLock>(layout.lock("k"));
  ASSERT_TRUE(holder->held());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    holder.reset();
  });
  KeyLock waiter(layout.lock("k"), Clock::now() + std::chrono::seconds(10));
  release.join();
  EXPECT_TRUE(waiter.held());
}

TEST_F(CacheTest, PublishFirstWinsAndTheLoserIsRemoved) {
  CacheLayout layout(dir_);
  fs::path a = layout.new_job(), b = layout.new_job();
  write(a / "ext.so", "first");
  write(b / "ext.so", "second");
  EXPECT_TRUE(publish(a, layout.module("k")));
  EXPECT_FALSE(fs::exists(a));
  EXPECT_FALSE(publish(b, layout.module("k")));
  EXPECT_FALSE(fs::exists(b));
  EXPECT_EQ(read(layout.module("k") / "ext.so"), "first");
}

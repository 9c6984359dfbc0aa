#include "store/seal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/expect_error.h"

namespace fs = std::filesystem;
using cudal1::Sealer;
using cudal1::test_support::expect_error;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("cudal1-seal-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

}  // namespace

TEST(Seal, KeyIsCreatedOwnerOnlyAndKeptAcrossOpens) {
  TempDir d;
  fs::path db = d.path / "results.db";
  std::string first = Sealer(db).seal("row", {"a", "b"});
  fs::path key = Sealer::key_path(db);
  ASSERT_TRUE(fs::exists(key));
  EXPECT_EQ(mode_of(key), mode_t(0600));
  EXPECT_EQ(fs::file_size(key), 32u);
  EXPECT_EQ(Sealer(db).seal("row", {"a", "b"}), first);  // the same key, read back
  EXPECT_NE(Sealer(d.path / "other.db").seal("row", {"a", "b"}), first);  // another file, another key
  for (auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
}

TEST(Seal, KeyOpenToOthersIsRefusedWithWhatToChmod) {
  TempDir d;
  fs::path db = d.path / "results.db";
  Sealer{db};
  fs::path key = Sealer::key_path(db);
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  cudal1::Error e = expect_error([&] { Sealer{db}; });
  EXPECT_EQ(e.kind(), cudal1::ErrorKind::store);
  EXPECT_NE(e.message().find("0644"), std::string::npos) << e.message();
  EXPECT_NE(e.hint().find("chmod 600 " + key.string()), std::string::npos) << e.hint();
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  EXPECT_NO_THROW(Sealer{db});
}

TEST(Seal, DamagedKeyIsRefused) {
  TempDir d;
  fs::path db = d.path / "results.db";
  Sealer{db};
  fs::resize_file(Sealer::key_path(db), 16);
  cudal1::Error e = expect_error([&] { Sealer{db}; });
  EXPECT_EQ(e.kind(), cudal1::ErrorKind::store);
  EXPECT_NE(e.message().find("not 32 bytes"), std::string::npos) << e.message();
  EXPECT_NE(e.hint().find("move it away"), std::string::npos);
}

TEST(Seal, ProcessesOpeningANewDatabaseAtOnceAgreeOnOneKey) {
  TempDir d;
  fs::path db = d.path / "results.db";
  std::vector<std::string> seals(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seals.size(); ++i)
    threads.emplace_back([&, i] { seals[i] = Sealer(db).seal("row", {"x"}); });
  for (auto& t : threads) t.join();
  for (auto& s : seals) EXPECT_EQ(s, seals[0]);
}

TEST(Seal, VerifiesOnlyTheSameFieldsUnderTheSameDomain) {
  TempDir d;
  Sealer s(d.path / "results.db");
  std::string seal = s.seal("evaluation", {"ab", "c"});
  EXPECT_EQ(seal.size(), 64u);  // hex SHA-256
  EXPECT_TRUE(s.verify(seal, "evaluation", {"ab", "c"}));
  EXPECT_FALSE(s.verify(seal, "evaluation", {"a", "bc"}));   // field boundaries are part of it
  EXPECT_FALSE(s.verify(seal, "evaluation", {"ab", "c", ""}));
  EXPECT_FALSE(s.verify(seal, "job", {"ab", "c"}));          // a seal of one kind of row fits no other
  EXPECT_FALSE(s.verify(seal, "evaluation", {"ab", "d"}));
  EXPECT_FALSE(s.verify("", "evaluation", {"ab", "c"}));
  EXPECT_FALSE(s.verify(seal.substr(0, 63) + (seal[63] == '0' ? "1" : "0"), "evaluation", {"ab", "c"}));
}

TEST(Seal, NewDatabaseFileIsOwnerOnlyAndAnOldOneKeepsItsMode) {
  TempDir d;
  mode_t old_mask = ::umask(022);
  fs::path fresh = d.path / "fresh.db", old = d.path / "old.db";
  cudal1::create_private_file(fresh);
  std::ofstream(old) << "";
  ::chmod(old.c_str(), 0640);
  cudal1::create_private_file(old);
  ::umask(old_mask);
  EXPECT_EQ(mode_of(fresh), mode_t(0600));
  EXPECT_EQ(mode_of(old), mode_t(0640));
}

TEST(Seal, AlarmCountsEveryIgnoredRow) {
  cudal1::SealAlarm alarm("store", "a hint");
  alarm.raise(0);
  EXPECT_EQ(alarm.count(), 0u);
  ::testing::internal::CaptureStderr();
  alarm.raise(2);
  alarm.raise(3);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(alarm.count(), 5u);
  EXPECT_NE(err.find("store: ignored 2 rows whose seal does not match (written outside cudal1?)"), std::string::npos) << err;
  EXPECT_NE(err.find("hint: a hint"), std::string::npos);
  EXPECT_EQ(err.find("ignored 3"), std::string::npos) << "said once, not per lookup";
}

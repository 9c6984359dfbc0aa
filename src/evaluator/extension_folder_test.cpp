#include "evaluator/extension_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/owned_dir.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

void touch(const fs::path& f) { std::ofstream(f) << ""; }

// A build killed mid-way left scale_add_ext/lock; the next evaluation of that candidate finds
// nobody else in the folder and removes it before its candidate starts.
TEST(ExtensionFolder, AStaleBuildLockIsRemovedByTheNextSoleClaimant) {
  OwnedDir root("extfolder", fs::temp_directory_path());
  fs::path folder = root.path() / "candidate";
  fs::create_directories(folder / "scale_add_ext");
  touch(folder / "scale_add_ext" / "lock");
  touch(folder / "scale_add_ext" / "scale_add_ext.so");
  ExtensionFolderClaim claim(folder);
  EXPECT_EQ(claim.stale_locks_removed(), 1);
  EXPECT_FALSE(fs::exists(folder / "scale_add_ext" / "lock"));
  EXPECT_TRUE(fs::exists(folder / "scale_add_ext" / "scale_add_ext.so"));  // the build stays
}

// While one evaluation holds the folder its build's lock is live: a second claimant leaves it.
TEST(ExtensionFolder, ALockIsLeftWhileAnotherEvaluationHoldsTheFolder) {
  OwnedDir root("extfolder", fs::temp_directory_path());
  fs::path folder = root.path() / "candidate";
  ExtensionFolderClaim first(folder);
  fs::create_directories(folder / "ext");
  touch(folder / "ext" / "lock");
  {
    ExtensionFolderClaim second(folder);
    EXPECT_EQ(second.stale_locks_removed(), 0);
    EXPECT_TRUE(fs::exists(folder / "ext" / "lock"));
  }
  first = ExtensionFolderClaim();  // the first evaluation ends without its build finishing
  ExtensionFolderClaim third(folder);
  EXPECT_EQ(third.stale_locks_removed(), 1);
  EXPECT_FALSE(fs::exists(folder / "ext" / "lock"));
}

// The folder holds what candidate code wrote: a link planted as an extension folder must not
// lead the cleaner to a `lock` elsewhere, and a link named lock goes without its target.
TEST(ExtensionFolder, APlantedLinkLeadsTheCleanerNowhereElse) {
  OwnedDir root("extfolder", fs::temp_directory_path());
  fs::path folder = root.path() / "candidate", elsewhere = root.path() / "elsewhere";
  fs::create_directories(elsewhere);
  touch(elsewhere / "lock");
  touch(elsewhere / "precious");
  fs::create_directories(folder / "ext");
  fs::create_directory_symlink(elsewhere, folder / "linked");
  fs::create_symlink(elsewhere / "precious", folder / "ext" / "lock");
  ExtensionFolderClaim claim(folder);
  EXPECT_EQ(claim.stale_locks_removed(), 1);  // the link itself
  EXPECT_FALSE(fs::exists(fs::symlink_status(folder / "ext" / "lock")));
  EXPECT_TRUE(fs::exists(elsewhere / "lock"));
  EXPECT_TRUE(fs::exists(elsewhere / "precious"));
}

TEST(ExtensionFolder, AFolderThatCannotBeMadeIsAnErrorThatSaysWhatToDo) {
  OwnedDir root("extfolder", fs::temp_directory_path());
  touch(root.path() / "file");
  try {
    ExtensionFolderClaim claim(root.path() / "file" / "candidate");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("CUDAL1_CACHE"), std::string::npos) << e.describe();
  }
}

}  // namespace

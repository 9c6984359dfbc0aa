#include "core/owned_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "core/paths.h"

using namespace cudal1;
namespace fs = std::filesystem;

TEST(OwnedDir, IsRemovedWhenItsOwnerEnds) {
  fs::path parent = make_private_dir("cudal1-owned-test");
  fs::path made;
  {
    OwnedDir d("cudal1-eval", parent);
    made = d.path();
    std::ofstream(made / "inputs.ctf") << "data";
    EXPECT_TRUE(fs::exists(made / ".owner"));
  }
  EXPECT_FALSE(fs::exists(made));
  fs::remove_all(parent);
}

// A process killed mid-evaluation (a deadline, the OOM killer) runs no destructor: the next
// process to make a folder there removes what it left, and nothing of a live owner's.
TEST(OwnedDir, AKilledOwnersFolderIsSweptAndALiveOnesIsNot) {
  fs::path parent = make_private_dir("cudal1-owned-test");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    OwnedDir* leaked = new OwnedDir("cudal1-eval", parent);  // never destroyed: the process is killed
    std::ofstream(leaked->path() / "expected.ctf") << "gigabytes";
    char c = 1;
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::optional<OwnedDir> live(std::in_place, "cudal1-eval", parent);  // sweeps: the child is alive
  auto count = [&] { return std::distance(fs::directory_iterator(parent), fs::directory_iterator()); };
  EXPECT_EQ(count(), 2);
  EXPECT_EQ(remove_abandoned_dirs(parent, "cudal1-eval"), 0u);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(remove_abandoned_dirs(parent, "cudal1-eval"), 1u);
  EXPECT_EQ(count(), 1);
  EXPECT_TRUE(fs::exists(live->path()));
  live.reset();
  EXPECT_EQ(count(), 0);
  fs::remove_all(parent);
  close(ready[0]), close(ready[1]);
}

TEST(OwnedDir, OtherFoldersAndYoungUnlockedOnesAreLeftAlone) {
  fs::path parent = make_private_dir("cudal1-owned-test");
  fs::create_directories(parent / "cudal1-eval-young");  // being made right now, no lock yet
  fs::create_directories(parent / "someone-else-abc");
  fs::create_directories(parent / "cudal1-eval-old");
  fs::last_write_time(parent / "cudal1-eval-old", fs::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_EQ(remove_abandoned_dirs(parent, "cudal1-eval"), 1u);
  EXPECT_TRUE(fs::exists(parent / "cudal1-eval-young"));
  EXPECT_TRUE(fs::exists(parent / "someone-else-abc"));
  EXPECT_FALSE(fs::exists(parent / "cudal1-eval-old"));
  fs::remove_all(parent);
}

#include "sandbox/mount_plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;
using namespace cudal1;

namespace {

struct TempTree {
  fs::path root = fs::weakly_canonical(fs::temp_directory_path()) / ("cudal1-mountplan-" + std::to_string(getpid()));
  TempTree() {
    fs::remove_all(root);
    for (auto d : {"hidden/keep/deep", "hidden/other", "home/venv/lib", "open/scratch"}) fs::create_directories(root / d);
    std::FILE* f = std::fopen((root / "open" / "store.db").c_str(), "w");
    std::fclose(f);
  }
  ~TempTree() { fs::remove_all(root); }
  std::string operator/(const char* p) const { return (root / p).string(); }
};

// The position of the option sequence {a, b, ...} in args, or -1.
long find(const std::vector<std::string>& args, std::vector<std::string> seq) {
  auto it = std::search(args.begin(), args.end(), seq.begin(), seq.end());
  return it == args.end() ? -1 : long(it - args.begin());
}

TEST(MountPlan, HidesFoldersAndBindsBackWhatLiesInside) {
  TempTree t;
  MountPlan plan;
  plan.hidden = {t / "hidden", t / "open/store.db", t / "missing"};
  plan.exposed = {{t / "hidden/keep", false}, {t / "open/scratch", true}};
  auto args = mount_options(plan);
  long tmpfs = find(args, {"--tmpfs", t / "hidden"});
  long keep = find(args, {"--ro-bind", t / "hidden/keep", t / "hidden/keep"});
  ASSERT_GE(tmpfs, 0);
  ASSERT_GE(keep, 0);
  EXPECT_LT(tmpfs, keep) << "a bind inside a hidden folder must come after its tmpfs";
  EXPECT_GE(find(args, {"--ro-bind", "/dev/null", t / "open/store.db"}), 0) << "a hidden file reads empty";
  EXPECT_GE(find(args, {"--bind", t / "open/scratch", t / "open/scratch"}), 0) << "writable even where visible";
  EXPECT_GT(find(args, {"--remount-ro", t / "hidden"}), keep) << "the tmpfs is made read-only last";
  EXPECT_EQ(find(args, {"--tmpfs", t / "missing"}), -1) << "nothing to hide where nothing is";
}

TEST(MountPlan, FoldersOnTheWayInsideATmpfsAreMadeOpen) {
  TempTree t;
  MountPlan plan;
  plan.hidden = {t / "hidden"};
  plan.exposed = {{t / "hidden/keep/deep", true}};
  auto args = mount_options(plan);
  long way = find(args, {"--perms", "0755", "--dir", t / "hidden/keep"});
  long bind = find(args, {"--bind", t / "hidden/keep/deep", t / "hidden/keep/deep"});
  ASSERT_GE(way, 0) << "bwrap would make it 0700, closed to a switched uid";
  EXPECT_GT(way, find(args, {"--tmpfs", t / "hidden"}));
  EXPECT_LT(way, bind);
}

TEST(MountPlan, ReadOnlyPathsThatShowAnywayNeedNoBind) {
  TempTree t;
  MountPlan plan;
  plan.exposed = {{t / "home/venv", false}};
  EXPECT_TRUE(mount_options(plan).empty());
}

TEST(MountPlan, FoldersTheUidCannotEnterBecomeWallsWithTheNeededPathBoundThrough) {
  TempTree t;
  MountPlan plan;
  plan.hidden = {t / "hidden"};
  plan.exposed = {{t / "home/venv/lib", false}, {t / "hidden/keep/deep", true}};
  // home is a 0700 home folder; hidden/keep too, inside an already hidden folder.
  plan.can_enter = [&](const std::string& p) { return p != t / "home" && p != t / "hidden/keep"; };
  auto args = mount_options(plan);
  long home = find(args, {"--tmpfs", t / "home"});
  long lib = find(args, {"--ro-bind", t / "home/venv/lib", t / "home/venv/lib"});
  ASSERT_GE(home, 0) << "an unenterable folder on the way is replaced";
  ASSERT_GT(lib, home);
  long wall = find(args, {"--tmpfs", t / "hidden/keep"});
  long deep = find(args, {"--bind", t / "hidden/keep/deep", t / "hidden/keep/deep"});
  ASSERT_GE(wall, 0) << "a wall inside a hidden folder still gets its own tmpfs";
  EXPECT_GT(deep, wall);
  EXPECT_LT(find(args, {"--tmpfs", t / "hidden"}), wall);
}

TEST(MountPlan, UidMayEnterReadsTheModeBits) {
  TempTree t;
  chmod((t / "home").c_str(), 0700);
  EXPECT_FALSE(uid_may_enter(t / "home", getuid() + 12345, getgid() + 12345));
  EXPECT_TRUE(uid_may_enter(t / "home", getuid(), getgid()));
  chmod((t / "home").c_str(), 0711);
  EXPECT_TRUE(uid_may_enter(t / "home", getuid() + 12345, getgid() + 12345));
  EXPECT_FALSE(uid_may_enter(t / "open/store.db", getuid(), getgid())) << "a file is no folder";
}

}  // namespace

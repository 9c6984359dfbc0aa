#include "core/owned_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <set>

#include "core/paths.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

constexpr const char* kOwnerFile = ".owner";

// Whether the owner of `dir` is gone. The lock file is made under another name and renamed once
// locked, so a folder still being made is never taken for an abandoned one.
bool abandoned(const fs::path& dir) {
  std::error_code ec;
  fs::path owner = dir / kOwnerFile;
  if (!fs::exists(owner, ec)) {
    auto age = fs::file_time_type::clock::now() - fs::last_write_time(dir, ec);
    return !ec && age > std::chrono::hours(1);
  }
  int fd = open(owner.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);  // drops the lock just taken, if any
  return free;
}

void sweep_once(const fs::path& parent, const std::string& prefix) {
  static std::mutex m;
  static std::set<std::string> swept;
  std::lock_guard<std::mutex> lock(m);
  if (swept.insert((parent / prefix).string()).second) remove_abandoned_dirs(parent, prefix);
}

}  // namespace

std::size_t remove_abandoned_dirs(const fs::path& parent, const std::string& prefix) {
  std::size_t removed = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(prefix + "-", 0) != 0 || !it->is_directory(ec) || !abandoned(it->path())) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

OwnedDir::OwnedDir(const std::string& prefix, const fs::path& parent) {
  sweep_once(parent, prefix);
  path_ = make_private_dir(prefix.c_str(), parent);
  fs::path making = path_ / ".owner.new";
  lock_fd_ = open(making.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  // Without a lock the folder is still removed by the destructor; only a kill would leave it.
  if (lock_fd_ >= 0 && flock(lock_fd_, LOCK_EX) == 0) {
    std::error_code ec;
    fs::rename(making, path_ / kOwnerFile, ec);
  }
}

OwnedDir::~OwnedDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace cudal1

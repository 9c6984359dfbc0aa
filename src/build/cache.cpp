#include "build/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/hash.h"

namespace cudal1 {

std::string cache_key(const nlohmann::json& parts) { return sha256_hex(parts.dump()); }

CacheLayout::CacheLayout(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  for (auto sub : {"modules", "pch", "jobs", "locks"}) {
    fs::create_directories(root_ / sub, ec);
    if (ec)
      throw Error(ErrorKind::runner, "cannot create the build cache folder " + (root_ / sub).string() + ": " + ec.message(),
                  "set CUDAL1_CACHE (or --cache) to a writable folder");
  }
}

fs::path CacheLayout::new_job() const {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 100; ++i) {
    char name[32];
    snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(rng()));
    fs::path dir = root_ / "jobs" / name;
    if (mkdir(dir.c_str(), 0700) == 0) return dir;
    if (errno != EEXIST) break;
  }
  throw Error(ErrorKind::runner, "cannot create a build job folder under " + (root_ / "jobs").string() + ": " + strerror(errno),
              "check that the build cache is writable and not full");
}

static int open_lock(const fs::path& file) {
  int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    throw Error(ErrorKind::runner, "cannot open the build lock " + file.string() + ": " + strerror(errno),
                "check that the build cache is writable");
  return fd;
}

KeyLock::KeyLock(const fs::path& file, std::chrono::steady_clock::time_point deadline) : fd_(open_lock(file)) {
  // Polled rather than blocking, so a waiter gives up at its deadline.
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      held_ = true;
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(pause);
  }
}

KeyLock::KeyLock(const fs::path& file) : fd_(open_lock(file)) { held_ = flock(fd_, LOCK_EX | LOCK_NB) == 0; }

KeyLock::~KeyLock() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor releases the lock
}

bool publish(const fs::path& ready, const fs::path& entry) {
  std::error_code ec;
  // rename(2) onto an existing non-empty folder fails: whoever came first wins.
  fs::rename(ready, entry, ec);
  if (!ec) return true;
  fs::remove_all(ready, ec);
  return false;
}

}  // namespace cudal1

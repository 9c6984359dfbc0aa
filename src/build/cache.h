// build/cache.h — the build cache on disk: content keys, one builder per key, atomic publishing.
//
// Layout under the cache root (docs/builds.md):
//   modules/<key>/   one built extension: <module>.so and build.json
//   pch/<key>/       one precompiled torch header and pch.json
//   jobs/<id>/       a build in progress (the only folder a compiler may write)
//   locks/<key>.lock flock(2) files: whoever holds one builds that key, the others wait
// An entry appears by rename(2) of a finished folder, so a reader sees all of it or nothing.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace cudal1 {

namespace fs = std::filesystem;

// sha256 of the compact dump of `parts` (nlohmann's objects are sorted by key, so the same
// content always gives the same text).
std::string cache_key(const nlohmann::json& parts);

class CacheLayout {
 public:
  explicit CacheLayout(fs::path root);  // creates the folders; throws Error(runner) when it cannot
  const fs::path& root() const { return root_; }
  fs::path module(const std::string& key) const { return root_ / "modules" / key; }
  fs::path pch(const std::string& key) const { return root_ / "pch" / key; }
  fs::path lock(const std::string& key) const { return root_ / "locks" / (key + ".lock"); }
  // A new empty job folder (jobs/<random>), mode 0700.
  fs::path new_job() const;

 private:
  fs::path root_;
};

// An exclusive flock on a lock file, held for the object's life.
class KeyLock {
 public:
  // Blocks until the lock is held or `deadline` passes (then held() is false).
  KeyLock(const fs::path& file, std::chrono::steady_clock::time_point deadline);
  // Takes the lock only if it is free now.
  explicit KeyLock(const fs::path& file);
  ~KeyLock();
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

// Moves the finished folder `ready` to `entry`. False when `entry` already exists (someone
// published it first); `ready` is then removed.
bool publish(const fs::path& ready, const fs::path& entry);

}  // namespace cudal1

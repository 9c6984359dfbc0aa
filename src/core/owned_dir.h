// core/owned_dir.h — private working folders that are removed even when their process is killed.
//
// An evaluation keeps inputs and outputs in a folder under /dev/shm (core/paths.h scratch_parent),
// gigabytes for large tasks. A process killed by a deadline or the OOM killer runs no destructor,
// and on the H200 machine such folders filled /dev/shm (110 GB) until later evaluations failed
// with "No space left on device" (bench/NOTES.md). So each folder holds an advisory lock on its
// `.owner` file for its owner's lifetime (the kernel drops it when the process dies however it
// dies), and the next process to make one removes every folder of the same prefix whose lock is free.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace cudal1 {

class OwnedDir {
 public:
  // A fresh private folder `prefix-XXXXXX` under `parent`, locked; the first one a process makes
  // under a parent also sweeps that parent's abandoned ones.
  OwnedDir(const std::string& prefix, const std::filesystem::path& parent);
  ~OwnedDir();  // removes the folder
  OwnedDir(const OwnedDir&) = delete;
  OwnedDir& operator=(const OwnedDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int lock_fd_ = -1;
};

// Removes the folders `prefix-*` under `parent` whose owner is gone: their `.owner` lock is free,
// or they have none and are over an hour old (made before locks, or killed while being made).
// Returns how many were removed.
std::size_t remove_abandoned_dirs(const std::filesystem::path& parent, const std::string& prefix);

}  // namespace cudal1

// build/pch.h — precompiled torch headers, one per toolchain, header and flag set.
//
// g++ uses a .gch only when it was built with the same options as the TU that includes it
// (GCC's rules: the same -O, -f, -m and -std options, macros defined the same way or unused by
// the header), so the key is every flag of the TU but -DTORCH_EXTENSION_NAME (torch's headers
// never use it) and the dependency-file options. Even so every use passes -Winvalid-pch: when
// g++ rejects the header it says so and reads the real headers, slower but the same.
// A missing header is built in the background while the build that asked compiles without it.
// clang's kind (build/clang.h) is a .pch with the header's templates instantiated in it, used
// with -include-pch; clang refuses one built with other options outright, and the build then
// compiles that TU with g++.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "build/cache.h"
#include "build/jobs.h"

namespace cudal1 {

struct PchRequest {
  std::string toolchain;            // the fingerprint: compilers, torch, CUDA
  std::string header;               // "torch/extension.h" or "torch/types.h"
  std::vector<std::string> cxx;     // the compiler's words ("c++")
  std::vector<std::string> flags;   // the TU's flags, as torch wrote them (shell words)
  bool clang = false;               // clang's .pch (flags are clang's) instead of g++'s .gch
};

// The precompiled file in a folder find_or_start returned: <header>.gch or <header>.pch.
std::filesystem::path pch_file(const std::filesystem::path& dir, const PchRequest& req);

// The flags a header is precompiled with for a TU with `tu_flags`: the same, less the module
// name and dependency-file options.
std::vector<std::string> pch_flags(const std::vector<std::string>& tu_flags);

class PchCache {
 public:
  PchCache(const CacheLayout& layout, JobPool& pool);
  ~PchCache();  // waits for headers still being built

  // The folder holding pch_file (for g++, the folder to pass with -I) when built; otherwise starts building it
  // (once per key at a time, across processes) and returns an empty path.
  std::filesystem::path find_or_start(const PchRequest& req);
  // The same, but when this process is building it, waits for it until `deadline`: for clang,
  // whose header takes less time to build than a TU takes to compile without it.
  std::filesystem::path find_or_wait(const PchRequest& req, std::chrono::steady_clock::time_point deadline);
  void wait();
  // Why this process could not build the header (the compiler's last words), or "".
  std::string failure(const PchRequest& req);

 private:
  std::string key_of(const PchRequest& req) const;
  void build(PchRequest req, std::string key);

  const CacheLayout& layout_;
  JobPool& pool_;
  std::mutex mutex_;
  std::condition_variable ended_;  // a build in building_ ended
  std::set<std::string> building_;
  // Not built again by this process (the same compiler fails the same way): key -> its output's tail.
  std::map<std::string, std::string> failed_;
  std::vector<std::thread> threads_;
};

}  // namespace cudal1

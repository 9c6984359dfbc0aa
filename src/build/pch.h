// build/pch.h — precompiled torch headers, one per toolchain, header and flag set.
//
// g++ uses a .gch only when it was built with the same options as the TU that includes it
// (GCC's rules: the same -O, -f, -m and -std options, macros defined the same way or unused by
// the header), so the key is every flag of the TU but -DTORCH_EXTENSION_NAME (torch's headers
// never use it) and the dependency-file options. Even so every use passes -Winvalid-pch: when
// g++ rejects the header it says so and reads the real headers, slower but the same.
// A missing header is built in the background while the build that asked compiles without it.
#pragma once

#include <filesystem>
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
};

// The flags a header is precompiled with for a TU with `tu_flags`: the same, less the module
// name and dependency-file options.
std::vector<std::string> pch_flags(const std::vector<std::string>& tu_flags);

class PchCache {
 public:
  PchCache(const CacheLayout& layout, JobPool& pool);
  ~PchCache();  // waits for headers still being built

  // The folder to pass with -I (it holds <header>.gch) when built; otherwise starts building it
  // (once per key at a time, across processes) and returns an empty path.
  std::filesystem::path find_or_start(const PchRequest& req);
  void wait();

 private:
  void build(PchRequest req, std::string key);

  const CacheLayout& layout_;
  JobPool& pool_;
  std::mutex mutex_;
  std::set<std::string> building_;
  std::vector<std::thread> threads_;
};

}  // namespace cudal1

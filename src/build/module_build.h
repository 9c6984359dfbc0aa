// build/module_build.h — one extension from torch's sources and build.ninja to a cached .so.
//
// The cache key covers the files compiled, torch's command lines and the toolchain, and the
// path asked for (fast or plain). Whoever holds the key's lock builds; a concurrent request for
// the same key waits and then reads the entry. The plain path runs torch's commands as ninja
// would. The fast path compiles main.cpp against a precompiled header (clang's when there is a
// clang, build/clang.h; else g++'s) and cuda.cu split in two (build/split.h), and falls back step
// by step (build/module_steps.h); only torch's own commands decide a failure.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "build/build.h"
#include "build/cache.h"
#include "build/jobs.h"
#include "build/clang.h"
#include "build/pch.h"

namespace cudal1 {

struct ModuleContext {
  const CacheLayout& layout;
  JobPool& pool;
  PchCache& pch;
  std::string fingerprint;  // toolchain: torch, CUDA, compilers (clang too), architectures
  bool fast = true;
  const ClangHost* clang = nullptr;  // the fast path's compiler for TUs with torch; null: g++ only
};

struct ModuleRequest {
  std::string spec_id, module;
  std::map<std::string, std::string> files;  // main.cpp, cuda.cu, build.ninja as torch wrote them
  std::string content_id;  // carried to the result (BuiltModule::content_id)
};

// Never throws for a candidate's fault: a failed build comes back with `error` set.
BuiltModule build_module(const ModuleContext& ctx, const ModuleRequest& req,
                         std::chrono::steady_clock::time_point deadline);

}  // namespace cudal1

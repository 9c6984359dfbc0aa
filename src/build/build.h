// build/build.h — the build service: a candidate's load_inline extensions, built outside its
// process, in parallel, cached by content (docs/builds.md).
//
// build_candidate() records which extensions the candidate module builds at import and, given its
// task, in ModelNew's constructor (running it sandboxed, with load_inline recorded), lets torch write the sources and build.ninja of each,
// and builds them in this trusted process: torch's own commands (the plain path), or the same
// sources through a precompiled torch header and with device code split from torch (the fast
// path), falling back to the plain path whenever the fast one fails. The evaluator then hands
// the built modules to the candidate's worker (inline_build.install_prebuilt), so its
// load_inline calls import them instead of compiling.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

struct BuildConfig {
  std::string cache_root;              // empty: $CUDAL1_CACHE/builds, else ~/.cache/cudal1/builds
  std::string python;                  // empty: find_python()
  int jobs = 0;                        // 0: the machine's cores
  std::size_t memory_budget_mb = 0;    // 0: 80 % of MemAvailable
  std::string arch_list;               // empty: $TORCH_CUDA_ARCH_LIST, else the card's (CUDA devices)
  bool fast_path = true;
  // The fast path's compiler for TUs that include torch (build/clang.h): empty finds one
  // ($CUDAL1_CLANG, else clang++ on PATH), "off" keeps g++, else the clang++ to use.
  std::string clang;
};

struct BuiltModule {
  // name: the module name the .so defines; path: "plain", "fast", or "fast+clang" (clang compiled a TU)
  std::string spec_id, name, so_path, path;
  bool cache_hit = false;
  double seconds = 0;
  std::string error;  // not empty: the build failed (so_path is empty); the compiler's words
  std::vector<std::string> notes;  // why the fast path gave a step to torch's own command
  std::string content_id;          // the spec less its name (inline_build.content_id)
};

struct BuildOutcome {
  enum class Kind { none, built, compile_error, capture_failed } kind = Kind::none;
  std::vector<BuiltModule> modules;  // every captured call the service built or tried to
  std::vector<std::pair<std::string, std::string>> in_process;  // (name, why) left to the candidate
  std::string log;  // compiler output of a failure, or why capture failed, for a person
  double seconds = 0;
  nlohmann::json to_json() const;
};

const char* build_kind_name(BuildOutcome::Kind kind);

class BuildService {
 public:
  explicit BuildService(BuildConfig config);
  ~BuildService();  // waits for precompiled headers still being built

  // Thread-safe: many candidates may build at once; equal modules are built once. With
  // `task_path`, the capture also constructs ModelNew(*get_init_inputs()) on the CPU, so that
  // load_inline calls in the constructor are built here too, not in the candidate's process.
  BuildOutcome build_candidate(const std::string& candidate_path, const std::string& device, double timeout_s,
                               const std::string& task_path = "");

  const BuildConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudal1

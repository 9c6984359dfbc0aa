// build/module_steps.h — the compiler runs of one module build (internal to build_module).
//
// ModuleSteps runs either path of build/module_build.h in a fresh job folder and records every
// step (command, seconds, output tail) and every fallback in `record`, which becomes the cache
// entry's build.json. The fast path compiles each TU that includes torch by the first of
// clang against its precompiled header (build/clang.h), g++ against a .gch (build/pch.h), and
// the TU's plain command that works; a failed split compiles cuda.cu whole; only torch's own
// commands decide that a module does not compile.
#pragma once

#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build/module_build.h"
#include "build/ninja_file.h"

namespace cudal1 {

// Torch's commands for this module, with paths relative to the job folder.
struct TorchCommands {
  std::string main, cuda, so;
  bool has_cuda = false;
  std::string link(const std::vector<std::string>& objects, const NinjaFile& nf) const;
};

TorchCommands torch_commands(const NinjaFile& nf);

class ModuleSteps {
 public:
  ModuleSteps(const ModuleContext& ctx, const ModuleRequest& req, std::chrono::steady_clock::time_point deadline,
              std::filesystem::path job);

  bool plain();
  bool fast();

  const TorchCommands& torch() const { return torch_; }
  nlohmann::json record = {{"steps", nlohmann::json::array()}, {"fallbacks", nlohmann::json::array()}};
  std::string path = "plain", error;  // path: "plain", "fast", or "fast+clang" when clang compiled a TU
  bool deterministic = true;
  nlohmann::json split_info = nullptr;

 private:
  // A TU that starts with `#include <header>`, compiled by `cxx` with `flags` (g++'s words).
  struct Tu {
    std::string label, stem, header;
    std::vector<std::string> cxx, flags;
    std::string plain;  // the command when no precompiled header serves (torch's, for main.cpp)
  };
  struct Compiled {
    StepResult result;
    bool fast = false, clang = false;
  };
  struct SplitPlan {
    std::optional<Tu> host;
    std::string device, check;
  };

  Compiled compile(const Tu& tu);
  std::optional<Compiled> compile_with_clang(const Tu& tu);
  std::optional<SplitPlan> split_plan(const std::optional<std::vector<std::string>>& cxx, std::string& why);
  bool run_split(const SplitPlan& p);
  bool link_fast(const std::vector<std::string>& cuda_objects);
  bool main_compiled(const Compiled& c);

  void note(const std::string& s);
  StepResult run(const std::string& name, const std::string& command, std::size_t mb,
                 const std::filesystem::path& ro = {});
  std::future<StepResult> later(const std::string& name, const std::string& command, std::size_t mb,
                                const std::filesystem::path& ro = {});
  bool decide(const StepResult& r);  // a step of torch's own commands: its failure is the build's
  bool link(const std::vector<std::string>& objects);

  const ModuleContext& ctx_;
  const ModuleRequest& req_;
  std::chrono::steady_clock::time_point deadline_;
  std::filesystem::path job_;
  NinjaFile nf_;
  TorchCommands torch_;
  std::mutex mutex_;
  std::optional<Tu> main_tu_, host_tu_;
  std::vector<std::string> split_objects_;
  bool split_tried_ = false, split_used_ = false, clang_refused_ = false;
  bool main_fast_ = false, main_clang_ = false, host_clang_ = false;
  std::string split_problem_;
};

}  // namespace cudal1

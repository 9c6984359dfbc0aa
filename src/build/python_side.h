// build/python_side.h — the two Python processes the build service needs.
//
// Capture runs the candidate module, which is hostile, in a sandboxed candidate-role worker
// (the evaluator's sandbox: unprivileged, memory and output bounded, caches hidden) with
// load_inline recorded instead of built. Preparation runs torch's own load_inline in a trusted
// worker, stopped before ninja, to get the exact sources and build.ninja torch would build.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/worker.h"

namespace cudal1 {

struct CapturedCall {
  std::string name, spec_id, module;  // module: the name the .so is built under (name, name_v1, ...)
  std::string content_id;             // the spec less its name (a load under another name matches it)
  std::string unsupported;            // not empty: the call builds in the candidate's own process
  nlohmann::json spec;
};

struct Capture {
  enum class Result { imported, import_failed, worker_failed } result = Result::worker_failed;
  std::string message;  // why the import or the worker failed, for a person
  std::vector<CapturedCall> calls;
};

struct CaptureOptions {
  // The capture runs on the CPU whatever the target: constructors that allocate or launch must
  // not touch a GPU other lanes are timing on. `target` is where the candidate will run; for
  // CUDA, torch.cuda.is_available() answers true there, so that the calls a constructor makes
  // only where CUDA is (the common `if torch.cuda.is_available(): load_inline(...)`) are recorded.
  std::string python, candidate, target;
  double timeout_s = 300;
  std::size_t memory_mb = 8192;
  std::vector<std::string> hide_dirs, hide_files;  // out of the candidate's sight
  std::string task;  // not empty: ModelNew(*get_init_inputs()) is constructed too, on the CPU
};

Capture capture_builds(const CaptureOptions& o);

// The checks a captured spec must pass before trusted code hands it on (it came from the
// candidate's process); "" when it is well-formed.
std::string spec_problem(const nlohmann::json& spec);

struct Prepared {
  std::string spec_id, module;
  std::map<std::string, std::string> files;  // main.cpp, cuda.cu (with CUDA), build.ninja
};

class Preparer {
 public:
  Preparer(std::string python, std::vector<std::string> hide_dirs);
  ~Preparer();
  void warm();  // starts the worker now (it imports torch), so the first prepare does not wait
  // Throws Error(runner) when torch refuses the spec or the worker breaks down.
  Prepared prepare(const nlohmann::json& spec, const std::string& module, const std::string& arch_list);
  nlohmann::json environment();  // {"torch", "cuda", "python"}
  std::string cuda_arch();       // the visible card's capability ("9.0"), or ""

 private:
  nlohmann::json call(const nlohmann::json& req, double timeout_s);
  void ensure_worker();

  std::string python_;
  std::vector<std::string> hide_;
  std::filesystem::path dir_;
  std::mutex mutex_;
  std::unique_ptr<Worker> worker_;
  int requests_ = 0;
};

}  // namespace cudal1

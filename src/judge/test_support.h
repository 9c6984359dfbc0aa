// judge/test_support.h — test support, not part of cudal1: a store of its own per test, and the
// red-team fixtures of the source tree.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/hash.h"
#include "evaluator/result.h"
#include "judge/judge.h"
#include "store/store.h"

namespace cudal1::judge {

// The source tree's tests/fixtures/candidates (the build embeds the tasks folder beside it).
inline std::filesystem::path fixture_candidates() {
  return std::filesystem::path(CUDAL1_SOURCE_TASKS_DIR).parent_path() / "tests" / "fixtures" / "candidates";
}

// An accepted result of `candidate` on `reference` at `speedup` against eager, as an evaluation
// would store it.
inline EvalResult accepted_result(const std::string& reference, const std::string& candidate, double speedup) {
  EvalResult r;
  r.accepted = true;
  r.status = Status::ok;
  r.speedup["eager"] = speedup;
  r.task_hash = sha256_hex(reference);
  r.candidate_hash = sha256_hex(candidate);
  return r;
}

// A judge in gate mode at `base_url` (a fake endpoint's), quick to give up on a failing one.
inline JudgeConfig gate_judge(const std::string& base_url) {
  JudgeConfig c;
  c.url = base_url;
  c.model = "judge-model";
  c.mode = JudgeMode::gate;
  c.max_retries = 1;
  c.backoff_base_s = 0.01;
  c.timeout_s = 5;
  return c;
}

// A fresh store under the temporary folder, removed with the object.
struct TempStore {
  std::filesystem::path dir;
  std::unique_ptr<Store> store;
  explicit TempStore(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("cudal1-judge-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    store = std::make_unique<Store>(dir / "results.db");
  }
  ~TempStore() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace cudal1::judge

// Baselines measured for real by the reference worker, cached in a store, and carried into an
// evaluation's speedups.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "baselines/baselines.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "store/store.h"
#include "task_facts/store_task_facts.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {
fs::path temp_store(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("cudal1-baselines-" + std::to_string(getpid()) + "-" + name + ".db");
  fs::remove(p);
  return p;
}
}  // namespace

// Eager against itself must come out near 1 (a loaded 2-core host allows a wide margin), the
// baselines this machine cannot run say why, and the second request comes from the cache.
TEST(BaselinesEval, ControlIsNearOneAndTheCacheAnswersAgain) {
  fs::path db = temp_store("control");
  Store store(db);
  BaselineOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "gemm_relu.py").string();
  o.device = "cpu";
  o.store = &store;
  o.buckets = 3;
  o.calls = 5;
  o.names = baseline_names();
  o.names.push_back("eager_control");
  BaselineSet first = measure_baselines(o);
  EXPECT_FALSE(first.from_cache);
  const BaselineFigure* control = first.find("eager_control");
  ASSERT_NE(control, nullptr);
  ASSERT_TRUE(control->ratio.has_value()) << control->unavailable;
  EXPECT_GT(*control->ratio, 0.33);
  EXPECT_LT(*control->ratio, 3.0);
  for (auto& name : baseline_names()) {
    const BaselineFigure* f = first.find(name);
    ASSERT_NE(f, nullptr) << name;
    if (!f->ratio) EXPECT_FALSE(f->unavailable.empty()) << name;  // on this CPU: no CUDA, maybe no torch.compile
  }
  BaselineSet again = measure_baselines(o);
  EXPECT_TRUE(again.from_cache);
  EXPECT_DOUBLE_EQ(*again.find("eager_control")->ratio, *control->ratio);
  fs::remove(db), fs::remove(db.string() + ".key");  // and its seal key
}

TEST(BaselinesEval, EvaluationCarriesTheBaselines) {
  fs::path db = temp_store("eval");
  Store store(db);
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "scale_add.py").string();
  o.candidate_path = (fixtures_dir() / "candidates" / "ok_scale_add_alpha.py").string();
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.lint = false;
  o.baselines = true;
  o.task_facts = store_task_facts(&store);
  EvalResult r = evaluate(o);
  ASSERT_TRUE(r.accepted) << r.error;
  ASSERT_TRUE(r.statistics.contains("baselines")) << r.statistics.dump();
  const auto& figs = r.statistics["baselines"]["figures"];
  for (auto& name : baseline_names()) {
    ASSERT_TRUE(figs.contains(name)) << figs.dump();
    // A measured baseline gives a speedup; an unavailable one gives none.
    EXPECT_EQ(r.speedup.count(name) == 1, figs[name].contains("ratio")) << name;
  }
  // The next evaluation of the task finds them in the cache under the environment its own
  // reference worker reported.
  EvalResult again = evaluate(o);
  ASSERT_TRUE(again.accepted) << again.error;
  EXPECT_TRUE(again.statistics["baselines"].value("from_cache", false)) << again.statistics["baselines"].dump();

  // Asked for one baseline, an evaluation measures that one alone (--baseline NAME).
  o.baseline_names = {"cudnn_autotune"};
  EvalResult one = evaluate(o);
  ASSERT_TRUE(one.accepted) << one.error;
  const auto& only = one.statistics["baselines"]["figures"];
  EXPECT_EQ(only.size(), 1u) << only.dump();
  EXPECT_TRUE(only.contains("cudnn_autotune")) << only.dump();
  EXPECT_EQ(one.speedup.count("compile"), 0u);
  fs::remove(db), fs::remove(db.string() + ".key");  // and its seal key
}

// Two lanes evaluating one task at once: one computes its lint and baselines, the other waits
// holding nothing of the device and reads them from the store (on the H200, lanes each
// compiled the same task's baseline side by side, 15 s apiece).
TEST(BaselinesEval, LanesOnOneTaskComputeItsLintAndBaselinesOnce) {
  fs::path db = temp_store("one-lane");
  Store store(db);
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "scale_add.py").string();
  o.candidate_path = (fixtures_dir() / "candidates" / "ok_scale_add_alpha.py").string();
  o.buckets = 3;
  o.calls_per_bucket = 4;
  o.lint = true;
  o.baselines = true;
  o.baseline_names = {"cudnn_autotune"};
  o.task_facts = store_task_facts(&store);
  o.device_gate = std::make_shared<DeviceGate>();
  EvalResult a, b;
  std::thread first([&] { a = evaluate(o); });
  std::thread second([&] { b = evaluate(o); });
  first.join();
  second.join();
  ASSERT_TRUE(a.accepted) << a.error;
  ASSERT_TRUE(b.accepted) << b.error;
  int lint_computed = !a.task_lint.value("from_store", false) + !b.task_lint.value("from_store", false);
  int baselines_computed = !a.statistics["baselines"].value("from_cache", false) +
                           !b.statistics["baselines"].value("from_cache", false);
  EXPECT_EQ(lint_computed, 1) << a.task_lint.dump() << "\n" << b.task_lint.dump();
  EXPECT_EQ(baselines_computed, 1) << a.statistics["baselines"].dump() << "\n" << b.statistics["baselines"].dump();
  fs::remove(db), fs::remove(db.string() + ".key");  // and its seal key
}

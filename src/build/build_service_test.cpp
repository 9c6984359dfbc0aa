// The build service end to end on the host: real captures, real g++ builds of the fixture
// corpus's load_inline candidates, and evaluations that import what it built.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <unistd.h>

#include "build/build.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

fs::path fresh_cache(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("cudal1-build-test-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

std::string candidate(const std::string& name) { return (fixtures_dir() / "candidates" / name).string(); }
std::string task(const std::string& name) { return (fixtures_dir() / "tasks" / name).string(); }
std::string build_fixture(const std::string& name) { return (fixtures_dir() / "build" / name).string(); }

// Torch's own commands only (no fast path), into a cache of this test's own.
BuildConfig plain_config(const std::string& cache_name) {
  BuildConfig cfg;
  cfg.cache_root = fresh_cache(cache_name).string();
  cfg.fast_path = false;
  return cfg;
}

EvalResult evaluate_with(std::shared_ptr<const BuildOutcome> built, const std::string& task_file, const std::string& cand_path) {
  EvalOptions o;
  o.task_path = task(task_file);
  o.candidate_path = cand_path;
  o.timing = false;
  o.lint = false;
  o.prebuilt = std::move(built);
  return evaluate(o);
}

}  // namespace

// Torch's own commands (the plain path); the evaluation's load_inline is answered from them,
// and the same module asked for again comes from the cache.
TEST(BuildService, PlainBuildServesTheEvaluationAndTheCacheAnswersAgain) {
  BuildService svc(plain_config("plain"));
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(candidate("ok_scale_add_load_inline_cpu.py"), "cpu", 600));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::built) << out->log;
  ASSERT_EQ(out->modules.size(), 1u);
  EXPECT_EQ(out->modules[0].path, "plain");
  EXPECT_FALSE(out->modules[0].cache_hit);
  ASSERT_TRUE(fs::exists(out->modules[0].so_path));

  EvalResult r = evaluate_with(out, "scale_add.py", candidate("ok_scale_add_load_inline_cpu.py"));
  EXPECT_TRUE(r.accepted) << r.error;
  ASSERT_TRUE(r.build.contains("calls_reported")) << r.build.dump();
  EXPECT_EQ(r.build["calls_reported"]["served"].size(), 1u) << r.build.dump();
  EXPECT_TRUE(r.build["calls_reported"]["missed"].empty()) << r.build.dump();

  BuildOutcome again = svc.build_candidate(candidate("ok_scale_add_load_inline_cpu.py"), "cpu", 600);
  ASSERT_EQ(again.modules.size(), 1u);
  EXPECT_TRUE(again.modules[0].cache_hit);
  EXPECT_EQ(again.modules[0].so_path, out->modules[0].so_path);
}

// A source that does not compile: the service says so with the compiler's words, and the
// evaluation it is handed to ends in compile_error, as it would had the candidate built it.
TEST(BuildService, CompileErrorReachesTheVerdict) {
  BuildService svc(plain_config("error"));
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(candidate("compile_error_load_inline_cpp.py"), "cpu", 600));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::compile_error) << out->to_json().dump();
  EXPECT_NE(out->log.find("error"), std::string::npos) << out->log;
  EvalResult r = evaluate_with(out, "scale_add.py", candidate("compile_error_load_inline_cpp.py"));
  EXPECT_EQ(r.status, Status::compile_error) << r.error;
}

// The fast path: once the precompiled torch header exists, main.cpp compiles against it
// (its second #include of torch/extension.h included), and the module still passes.
TEST(BuildService, FastPathUsesThePrecompiledHeader) {
  fs::path cache = fresh_cache("fast");
  {
    BuildConfig cfg;
    cfg.cache_root = cache.string();
    cfg.clang = "off";
    BuildService first(cfg);  // starts the header; its own build goes without; waits for it on exit
    BuildOutcome warm = first.build_candidate(candidate("ok_softmax_rows_load_inline_cpu.py"), "cpu", 900);
    ASSERT_EQ(warm.kind, BuildOutcome::Kind::built) << warm.log;
  }
  BuildConfig cfg;
  cfg.cache_root = cache.string();
  cfg.clang = "off";
  BuildService svc(cfg);
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(candidate("ok_gemm_relu_load_inline_cpu.py"), "cpu", 900));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::built) << out->log;
  ASSERT_EQ(out->modules.size(), 1u);
  EXPECT_EQ(out->modules[0].path, "fast") << out->to_json().dump();
  EvalResult r = evaluate_with(out, "gemm_relu.py", candidate("ok_gemm_relu_load_inline_cpu.py"));
  EXPECT_TRUE(r.accepted) << r.error;

  // An error in main.cpp's own lines under the precompiled header is torch's command's error:
  // it decides, with no second compile without the header, and the verdict is compile_error.
  const std::string error_own_lines = build_fixture("error_own_lines_load_inline_cpu.py");
  auto broken = std::make_shared<BuildOutcome>(svc.build_candidate(error_own_lines, "cpu", 900));
  ASSERT_EQ(broken->kind, BuildOutcome::Kind::compile_error) << broken->to_json().dump();
  ASSERT_EQ(broken->modules.size(), 1u);
  EXPECT_EQ(broken->modules[0].path, "fast") << broken->to_json().dump();
  ASSERT_FALSE(broken->modules[0].notes.empty()) << broken->to_json().dump();
  EXPECT_NE(broken->modules[0].notes[0].find("that decides"), std::string::npos) << broken->to_json().dump();
  EXPECT_EQ(broken->log.find("without precompiled header"), std::string::npos) << broken->log;
  EXPECT_EQ(evaluate_with(broken, "scale_add.py", error_own_lines).status, Status::compile_error);
}

// With clang (the default where there is one): the first build waits for clang's precompiled
// header, main.cpp compiles with clang against it, the link check passes and the module passes.
// A source only g++ takes is handed to g++ with a note, and still passes.
TEST(BuildService, ClangCompilesAndHandsWhatItCannotToGxx) {
  BuildConfig cfg;
  cfg.cache_root = fresh_cache("clang").string();
  BuildService svc(cfg);
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(candidate("ok_gemm_relu_load_inline_cpu.py"), "cpu", 900));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::built) << out->log;
  ASSERT_EQ(out->modules.size(), 1u);
  EXPECT_EQ(out->modules[0].path, "fast+clang") << out->to_json().dump();
  EXPECT_TRUE(out->modules[0].notes.empty()) << out->to_json().dump();
  EXPECT_TRUE(evaluate_with(out, "gemm_relu.py", candidate("ok_gemm_relu_load_inline_cpu.py")).accepted);

  std::string gxx_only = build_fixture("gxx_only_load_inline_cpu.py");
  auto handed = std::make_shared<BuildOutcome>(svc.build_candidate(gxx_only, "cpu", 900));
  ASSERT_EQ(handed->kind, BuildOutcome::Kind::built) << handed->log;
  ASSERT_EQ(handed->modules.size(), 1u);
  EXPECT_NE(handed->modules[0].path, "fast+clang");
  ASSERT_FALSE(handed->modules[0].notes.empty()) << handed->to_json().dump();
  EXPECT_NE(handed->modules[0].notes[0].find("clang did not compile it"), std::string::npos) << handed->to_json().dump();
  EXPECT_NE(handed->modules[0].notes[0].find("written for g++"), std::string::npos) << handed->to_json().dump();
  EvalResult r = evaluate_with(handed, "scale_add.py", gxx_only);
  EXPECT_TRUE(r.accepted) << r.error;
}

// An extension built in ModelNew's constructor: given the task, the capture constructs the model
// and records the call, and the evaluation's process compiles nothing; without the task, only
// the import is recorded and nothing is built.
TEST(BuildService, ConstructorTimeBuildIsCapturedWithTheTask) {
  BuildService svc(plain_config("ctor"));
  std::string cand = build_fixture("ctor_load_inline_cpu.py");
  BuildOutcome bare = svc.build_candidate(cand, "cpu", 600);
  EXPECT_EQ(bare.kind, BuildOutcome::Kind::none) << bare.to_json().dump();
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(cand, "cpu", 600, task("scale_add.py")));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::built) << out->log;
  ASSERT_EQ(out->modules.size(), 1u);
  EvalResult r = evaluate_with(out, "scale_add.py", cand);
  EXPECT_TRUE(r.accepted) << r.error;
  const auto& calls = r.build["calls_reported"];
  EXPECT_FALSE(calls["served"].empty()) << r.build.dump();  // once a constructed model
  EXPECT_TRUE(calls["missed"].empty()) << r.build.dump();
}

// A constructor that builds only where CUDA is: for a CUDA target the capture, on the CPU, records
// the call as a GPU would have it made; for a CPU target there is nothing to build.
TEST(BuildService, ACudaGuardedConstructorBuildIsCapturedForACudaTarget) {
  BuildService svc(plain_config("cuda-guarded"));
  std::string cand = build_fixture("cuda_guarded_ctor_load_inline_cpu.py");
  BuildOutcome for_cpu = svc.build_candidate(cand, "cpu", 600, task("scale_add.py"));
  EXPECT_EQ(for_cpu.kind, BuildOutcome::Kind::none) << for_cpu.to_json().dump();
  BuildOutcome for_cuda = svc.build_candidate(cand, "cuda:0", 600, task("scale_add.py"));
  ASSERT_EQ(for_cuda.kind, BuildOutcome::Kind::built) << for_cuda.to_json().dump();
  ASSERT_EQ(for_cuda.modules.size(), 1u);
  EXPECT_EQ(for_cuda.modules[0].name, "cudal1_fixture_scale_add_cuda_guarded");

  // An import that goes on to use the CUDA it is told of fails without a GPU: captured again
  // without the pretence, its own call is still built.
  std::string at_import = build_fixture("cuda_work_at_import_load_inline_cpu.py");
  BuildOutcome warm = svc.build_candidate(at_import, "cuda:0", 600, task("scale_add.py"));
  ASSERT_EQ(warm.kind, BuildOutcome::Kind::built) << warm.to_json().dump();
  ASSERT_EQ(warm.modules.size(), 1u);
  EXPECT_EQ(warm.modules[0].name, "cudal1_fixture_scale_add_cuda_at_import");
}

// A constructor that ends the capture's worker costs only itself: the capture is redone without
// it, and the call the import made is still built.
TEST(BuildService, ConstructorThatKillsTheCaptureKeepsTheImportsCalls) {
  BuildService svc(plain_config("ctor-exits"));
  std::string cand = build_fixture("ctor_exits_load_inline_cpu.py");
  BuildOutcome out = svc.build_candidate(cand, "cpu", 600, task("scale_add.py"));
  ASSERT_EQ(out.kind, BuildOutcome::Kind::built) << out.to_json().dump();
  ASSERT_EQ(out.modules.size(), 1u);
  EXPECT_EQ(out.modules[0].name, "cudal1_fixture_scale_add_ctor_exits");
}

// An extension named after the clock: the capture saw one name, the evaluation's load asks for
// another. The same sources and flags are the same build, served under the name it was built
// with, and the candidate's process compiles nothing.
TEST(BuildService, ExtensionNamedAfterTheClockIsServedByContent) {
  BuildService svc(plain_config("clock"));
  std::string cand = build_fixture("clock_named_load_inline_cpu.py");
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(cand, "cpu", 600));
  ASSERT_EQ(out->kind, BuildOutcome::Kind::built) << out->log;
  ASSERT_EQ(out->modules.size(), 1u);
  EXPECT_FALSE(out->modules[0].content_id.empty());
  EvalResult r = evaluate_with(out, "scale_add.py", cand);
  EXPECT_TRUE(r.accepted) << r.error;
  const auto& calls = r.build["calls_reported"];
  EXPECT_TRUE(calls["missed"].empty()) << r.build.dump();
  ASSERT_EQ(calls.value("renamed", nlohmann::json::array()).size(), 1u) << r.build.dump();
  EXPECT_EQ(calls["renamed"][0]["built"], out->modules[0].name);
}

// A call the capture could not foresee (its source carries a random tag) compiles in the candidate's
// own process; when that fails and the candidate falls back to PyTorch, the result keeps the
// compiler's first error, which a decoy flag quotes on a GPU.
TEST(BuildService, AMissedCallThatFailsInProcessKeepsTheCompilersError) {
  BuildService svc(plain_config("random-sourced"));
  std::string cand = build_fixture("random_sourced_broken_load_inline_cpu.py");
  auto out = std::make_shared<BuildOutcome>(svc.build_candidate(cand, "cpu", 600));
  EvalResult r = evaluate_with(out, "scale_add.py", cand);
  EXPECT_TRUE(r.accepted) << r.error;  // PyTorch's fallback is correct
  const auto& calls = r.build["calls_reported"];
  EXPECT_EQ(calls["missed"].size(), 1u) << r.build.dump();
  ASSERT_EQ(calls.value("in_process_failed", nlohmann::json::array()).size(), 1u) << r.build.dump();
  const std::string error = calls["in_process_failed"][0];
  EXPECT_NE(error.find("error:"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(error.find("return x * scale + y"), std::string::npos) << error;  // the source line is not quoted
}

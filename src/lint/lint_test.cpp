// The degenerate-task lint on real tasks in a real reference worker: each fixture under
// tests/fixtures/lint/ is caught for its own reason, an honest task is not, and the CLI's JSON
// and failure reporting hold.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "evaluator/fixture_cases.h"
#include "lint/lint.h"
#include "store/store.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace cudal1;

namespace {

std::string fixture(const std::string& rel) { return (fixtures_dir() / rel).string(); }

LintOptions options(const std::string& rel) {
  LintOptions o;
  o.task_path = fixture(rel);
  o.timeout_s = 120;
  return o;
}

std::set<std::string> ids(const LintResult& r) {
  std::set<std::string> s;
  for (auto& f : r.findings) s.insert(f.id);
  return s;
}

const LintCheck& check(const LintResult& r, const std::string& id) {
  for (auto& c : r.checks)
    if (c.id == id) return c;
  throw std::runtime_error("no check " + id);
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("cudal1_lint_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST(Lint, TinyOutputPassesAsZerosAtLooseToleranceOnly) {
  auto rs = lint_task_cached(options("lint/tiny_scale.py"), {{ToleranceMode::standard, 1e-2}, {ToleranceMode::standard, 1e-4}},
                             nullptr);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_TRUE(rs[0].degenerate);
  EXPECT_TRUE(ids(rs[0]).count("all_zeros")) << rs[0].to_json().dump(1);
  EXPECT_NE(rs[0].findings[0].evidence.find("passes on 6/6 cases at atol=rtol=1e-2"), std::string::npos)
      << rs[0].findings[0].evidence;
  EXPECT_EQ(rs[0].tolerance, "1e-2");
  EXPECT_FALSE(rs[1].degenerate) << rs[1].to_json().dump(1);
  EXPECT_FALSE(check(rs[1], "weight_independent").tested);  // no parameters: nothing to swap
}

TEST(Lint, ReturnedParameterIsInputIndependentOnly) {
  LintResult r = lint_task(options("lint/returns_parameter.py"));
  EXPECT_EQ(ids(r), std::set<std::string>{"input_independent"}) << r.to_json().dump(1);
  EXPECT_TRUE(check(r, "weight_independent").tested);
}

TEST(Lint, SoftmaxOverASizeOneDimensionIsConstant) {
  LintResult r = lint_task(options("lint/softmax_size_one.py"));
  EXPECT_TRUE(ids(r).count("constant")) << r.to_json().dump(1);
  EXPECT_FALSE(ids(r).count("all_zeros"));
  EXPECT_NE(check(r, "constant").evidence.find("(1)"), std::string::npos) << check(r, "constant").evidence;
}

TEST(Lint, NegligibleLayerIsWeightIndependentOnly) {
  LintResult r = lint_task(options("lint/weight_ignored.py"));
  EXPECT_EQ(ids(r), std::set<std::string>{"weight_independent"}) << r.to_json().dump(1);
}

TEST(Lint, HonestTaskIsNotDegenerate) {
  LintResult r = lint_task(options("tasks/gemm_relu.py"));
  EXPECT_FALSE(r.degenerate) << r.to_json().dump(1);
  EXPECT_FALSE(r.fixed_weights);
  ASSERT_EQ(r.checks.size(), 4u);
  for (auto& c : r.checks) {
    EXPECT_TRUE(c.tested) << c.id;
    EXPECT_EQ(c.cases, 6) << c.id;
    EXPECT_NE(c.evidence.find("fails on"), std::string::npos) << c.evidence;
  }
  EXPECT_EQ(r.cases.size(), 6u);
  EXPECT_EQ(r.task_hash.size(), 64u);
}

TEST(Lint, ResultsAreCachedByContentAndRoundTrip) {
  fs::path db = temp_path("cache.db");
  {
    Store store(db);
    LintResult first = lint_task_cached(fixture("lint/tiny_scale.py"), "cpu", ToleranceMode::standard, &store, "");
    LintResult second = lint_task_cached(fixture("lint/tiny_scale.py"), "cpu", ToleranceMode::standard, &store, "");
    EXPECT_FALSE(first.from_store);
    EXPECT_TRUE(second.from_store);
    json a = first.to_json(), b = second.to_json();
    a.erase("from_store"), b.erase("from_store");
    EXPECT_EQ(a, b);
    // The device's index is not part of the question ("cuda:0" answers for "cuda").
    EXPECT_TRUE(lint_task_cached(fixture("lint/tiny_scale.py"), "cpu:0", ToleranceMode::standard, &store, "").from_store);
    // Another tolerance is another question.
    EXPECT_FALSE(lint_task_cached(fixture("lint/tiny_scale.py"), "cpu", ToleranceMode::strict, &store, "").from_store);
  }
  for (const char* suffix : {"", "-wal", "-shm", ".key"}) fs::remove(db.string() + suffix);
}

TEST(Lint, TasksThatCannotRunAreTypedErrors) {
  try {
    lint_task(options("bad_tasks/syntax_error.py"));
    FAIL() << "a task with a syntax error linted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::task);
    EXPECT_NE(e.message().find("syntax_error.py:9"), std::string::npos) << e.message();
  }
  try {
    lint_task(options("lint/no_such_task.py"));
    FAIL() << "a missing file linted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
}

// Half-precision constants go through the same encode-and-compare path as float32 ones.
TEST(Lint, DecidesOnHalfPrecisionOutputs) {
  LintGrid g;
  g.draw_dists = {"normal", "scaled_offset", "normal"};
  g.draw_seeds = {1, 2, 3};
  g.init_seeds = {7};
  TensorValue v;
  v.dtype = DType::f16, v.dtype_text = "float16", v.shape = {4};
  for (uint16_t bits : {0x3C00, 0x3C01, 0x3BFF, 0x3C00}) {  // about 1.0
    v.bytes.push_back(uint8_t(bits & 0xFF));
    v.bytes.push_back(uint8_t(bits >> 8));
  }
  g.outputs = {{{v}, {v}, {v}}};
  LintResult r = lint_decide(g, {});
  EXPECT_EQ(ids(r), (std::set<std::string>{"constant", "input_independent"})) << r.to_json().dump(1);
  EXPECT_EQ(LintResult::from_json(r.to_json()).to_json(), r.to_json());
}

// --- the CLI -------------------------------------------------------------------------------

namespace {

struct Cli {
  int code;
  std::string out, err;
};

Cli lint_cli(const std::string& args) {
  fs::path out = temp_path("out"), err = temp_path("err");
  int status = std::system((std::string(CUDAL1_BINARY) + " lint-task " + args + " >" + out.string() + " 2>" +
                            err.string()).c_str());
  auto slurp = [](const fs::path& p) {
    std::stringstream ss;
    ss << std::ifstream(p).rdbuf();
    fs::remove(p);
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace

TEST(LintCli, JsonForOneTaskIsItsResult) {
  Cli r = lint_cli(fixture("lint/softmax_size_one.py") + " --json --no-store");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_TRUE(j["degenerate"].get<bool>());
  EXPECT_EQ(j["tolerance"], "standard");
  EXPECT_EQ(j["cases"].size(), 6u);
  EXPECT_EQ(j["checks"].size(), 4u);
  bool constant = false;
  for (auto& f : j["findings"]) constant |= f["id"] == "constant";
  EXPECT_TRUE(constant) << r.out;
}

TEST(LintCli, JsonLinesRowsThatFailAreReportedNotFatal) {
  fs::path rows = temp_path("rows.jsonl");
  std::string good((std::istreambuf_iterator<char>(*std::make_unique<std::ifstream>(fixture("lint/tiny_scale.py")))),
                   std::istreambuf_iterator<char>());
  {
    std::ofstream f(rows);
    f << json{{"level_id", 1}, {"task_id", 7}, {"ref_code", good}}.dump() << "\n";
    f << json{{"level_id", 2}, {"task_id", 3}, {"ref_code", "class Model(:\n"}}.dump() << "\n";
    f << "not json\n";
  }
  Cli r = lint_cli("--jsonl " + rows.string() + " --atol-rtol 1e-2,1e-4 --json --no-store");
  fs::remove(rows);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u) << r.out;  // the good row at two tolerances, two failures
  EXPECT_EQ(j["results"][0]["name"], "level1/task7");
  EXPECT_TRUE(j["results"][0]["degenerate"].get<bool>());
  EXPECT_FALSE(j["results"][1]["degenerate"].get<bool>());
  EXPECT_EQ(j["results"][2]["name"], "level2/task3");
  EXPECT_EQ(j["results"][2]["error"]["kind"], "task");
  EXPECT_EQ(j["results"][3]["error"]["kind"], "input");
  EXPECT_EQ(j["summary"]["1e-2"]["degenerate"], 1);
  EXPECT_EQ(j["summary"]["1e-4"]["failed"], 2);
  EXPECT_NE(r.err.find("[1/3] level1/task7"), std::string::npos) << r.err;
}

TEST(LintCli, BadInputIsATypedError) {
  Cli missing = lint_cli("/nonexistent/task.py --no-store");
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("hint:"), std::string::npos) << missing.err;
  EXPECT_EQ(lint_cli(fixture("bad_tasks/import_fails.py") + " --no-store").code, 4);
  EXPECT_EQ(lint_cli(fixture("lint/tiny_scale.py") + " --tolerance loose --no-store").code, 2);
  EXPECT_EQ(lint_cli("--no-store").code, 2);
}

TEST(Lint, WeightsThatIgnoreTheSeedAreReportedAsFixed) {
  LintResult r = lint_task(options("lint/fixed_weights_scale.py"));
  EXPECT_FALSE(r.degenerate) << r.to_json().dump(1);
  EXPECT_TRUE(r.fixed_weights) << r.to_json().dump(1);
  EXPECT_FALSE(check(r, "weight_independent").tested);
  EXPECT_TRUE(LintResult::from_json(r.to_json()).fixed_weights);
  Cli cli = lint_cli(fixture("lint/fixed_weights_scale.py") + " --no-store");
  EXPECT_NE(cli.out.find("warning: "), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("draw them at random"), std::string::npos) << cli.out;
}

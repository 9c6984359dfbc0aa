// The CLI as a user meets it: exit statuses, stdout holding only our JSON, the store.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "core/hash.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "runner/python.h"
#include "store/store.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

using namespace cudal1::test;  // CliRun, run_cli, only_json, fixture

namespace {

std::string eval_args(const std::string& task, const std::string& cand, const std::string& device = "cpu") {
  return "eval --task " + fixture("tasks/" + task) + " --candidate " + fixture("candidates/" + cand) +
         " --device " + device + " --buckets 3 --calls 3 --build-timeout 30 --call-timeout 15";
}

}  // namespace

TEST(Cli, VersionAndHelp) {
  auto v = run_cli("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("cudal1 "), std::string::npos);
  auto h = run_cli("eval --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--candidate"), std::string::npos);
}

TEST(Cli, JsonHasTheStableFields) {
  auto r = run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py") + " --json --no-store");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = only_json(r.out);
  for (auto key : {"accepted", "status", "flags", "runtime_ms", "speedup", "error", "statistics",
                   "provenance", "correctness"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["accepted"].get<bool>());
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(j["speedup"].contains("eager"));
  EXPECT_EQ(j["provenance"]["protocol"], cudal1::kProtocolVersion);
  EXPECT_GE(j["statistics"]["buckets"].get<int>(), 3);
}

TEST(Cli, ForgedVerdictsNeverReachStdout) {
  auto r = run_cli(eval_args("gemm_relu.py", "incorrect_fake_verdict_output.py") + " --json --no-store");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = only_json(r.out);
  EXPECT_FALSE(j["accepted"].get<bool>());
  EXPECT_EQ(r.out.find("\"speedup\":{\"eager\":100"), std::string::npos);
}

TEST(Cli, EarlyExitIsNeverAccepted) {
  auto r = run_cli(eval_args("scale_add.py", "crash_exit_zero.py") + " --json --no-store");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = only_json(r.out);
  EXPECT_FALSE(j["accepted"].get<bool>());
  EXPECT_EQ(j["status"], "crash");
}

TEST(Cli, StoreAnswersRepeatsUnlessForced) {
  fs::path db = fs::temp_directory_path() / ("cudal1_cli_store_" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  std::string base = eval_args("softmax_rows.py", "ok_softmax_rows_stable.py") + " --json --db " + db.string();
  json first = only_json(run_cli(base).out);
  EXPECT_FALSE(first["from_store"].get<bool>());
  json second = only_json(run_cli(base).out);
  EXPECT_TRUE(second["from_store"].get<bool>());
  EXPECT_EQ(second["speedup"], first["speedup"]);
  json forced = only_json(run_cli(base + " --force").out);
  EXPECT_FALSE(forced["from_store"].get<bool>());
  fs::remove(db), fs::remove(db.string() + ".key");  // and its seal key
}

// The attack the seals answer: a candidate's process reached the store with sqlite3 and planted
// an accepted 50x verdict under another file's hash. That file (all zeros) is evaluated, and the
// planted row is reported on stderr, never answered.
TEST(Cli, AVerdictPlantedInTheStoreIsNeverAnswered) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_cli_planted_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path db = dir / "results.db";
  { cudal1::Store created(db); }
  cudal1::EvalOptions o;  // eval_args' protocol: 3 buckets of 3 calls
  o.buckets = 3;
  o.calls_per_bucket = 3;
  cudal1::EvalResult forged;
  forged.status = cudal1::Status::ok;
  forged.accepted = true;
  forged.speedup["eager"] = 50.0;
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
    SQLite::Statement ins(raw, "INSERT INTO evaluations (task_hash, candidate_hash, candidate_source, device, protocol, "
                               "status, accepted, speedup_eager, result_json) VALUES (?, ?, '', 'cpu', ?, 'ok', 1, 50.0, ?)");
    ins.bind(1, cudal1::sha256_hex(cudal1::read_file(fixture("tasks/scale_add.py"))));
    ins.bind(2, cudal1::sha256_hex(cudal1::read_file(fixture("candidates/incorrect_scale_add_zeros.py"))));
    ins.bind(3, o.protocol_key());
    ins.bind(4, forged.to_json().dump());
    ins.exec();
  }
  auto r = run_cli(eval_args("scale_add.py", "incorrect_scale_add_zeros.py") + " --json --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = only_json(r.out);
  EXPECT_FALSE(j["from_store"].get<bool>());
  EXPECT_EQ(j["status"], "incorrect");
  EXPECT_FALSE(j["accepted"].get<bool>());
  EXPECT_NE(r.err.find("store: ignored 1 row whose seal does not match (written outside cudal1?)"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(Cli, MissingFileIsAnInputError) {
  auto r = run_cli("eval --task /nonexistent/task.py --candidate /nonexistent/c.py --no-store");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no such file"), std::string::npos);
  EXPECT_NE(r.err.find("hint"), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

// One parser for every --device: a name one command refuses, no other accepts (each once read
// "cudafoo" as a CUDA device, another refused it).
TEST(Cli, EveryCommandRefusesAnUnknownDeviceAlike) {
  for (std::string cmd : {"eval --task x.py --candidate y.py", "lint-task x.py", "batch --pairs p.txt", "bench --suite s",
                          "baselines x.py", "enrich --suite s", "build x.py", "tasks list --suite s",
                          "optimize --task x.py", "serve --port 0"}) {
    CliRun r = run_cli(cmd + " --device cudafoo");
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("unknown device 'cudafoo'"), std::string::npos) << cmd << ": " << r.err;
  }
}

TEST(Cli, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py", "tpu") + " --no-store").exit_code, 2);
  EXPECT_EQ(run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py") + " --device cpu --no-store").exit_code, 2);
  EXPECT_EQ(run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py") + " --tolerance loose --no-store").exit_code, 2);
  EXPECT_EQ(run_cli("eval").exit_code, 2);
  auto unknown = run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py") + " --baseline torch_jit --no-store");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("compile_ro"), std::string::npos) << unknown.err;  // says what to pick
}

// Scripts written when the compile baselines were compile_default and compile_reduce_overhead
// still run; the figure comes under today's name.
TEST(Cli, AnEarlierBaselineNameIsTakenUnderTodays) {
  auto r = run_cli(eval_args("gemm_relu.py", "ok_gemm_relu_addmm.py") + " --baseline compile_default --no-store --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json figures = only_json(r.out)["statistics"]["baselines"]["figures"];
  EXPECT_TRUE(figures.contains("compile")) << figures.dump();
  EXPECT_FALSE(figures.contains("compile_default")) << figures.dump();
}

TEST(Cli, TaskErrorsNameFileAndLine) {
  std::string cand = " --candidate " + fixture("candidates/ok_gemm_relu_addmm.py") + " --no-store";
  auto syntax = run_cli("eval --task " + fixture("bad_tasks/syntax_error.py") + cand);
  EXPECT_EQ(syntax.exit_code, 4);
  EXPECT_NE(syntax.err.find("syntax_error.py:9"), std::string::npos) << syntax.err;
  auto missing = run_cli("eval --task " + fixture("bad_tasks/missing_get_inputs.py") + cand);
  EXPECT_EQ(missing.exit_code, 4);
  EXPECT_NE(missing.err.find("get_inputs"), std::string::npos) << missing.err;
  auto import = run_cli("eval --task " + fixture("bad_tasks/import_fails.py") + cand);
  EXPECT_EQ(import.exit_code, 4);
  EXPECT_NE(import.err.find("import_fails.py:3"), std::string::npos) << import.err;
  EXPECT_NE(import.err.find("cudal1_no_such_module_anywhere"), std::string::npos);
}

TEST(Cli, TasksListHasTheWholeSuiteWithComputedFigures) {
  fs::path db = fs::temp_directory_path() / ("cudal1_tasks_" + std::to_string(::getpid()) + ".db");
  auto r = run_cli("tasks list --json --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json tasks = json::parse(r.out);
  EXPECT_GE(tasks.size(), 60u);
  std::set<int> levels;
  for (auto& t : tasks) {
    levels.insert(t["level"].get<int>());
    EXPECT_TRUE(t["flops"].is_number()) << t["name"];
    EXPECT_GT(t["bytes"].get<double>(), 0) << t["name"];
    EXPECT_FALSE(t["name"].get<std::string>().empty());
  }
  EXPECT_EQ(levels, (std::set<int>{1, 2, 3}));
  // Cached by content hash: the second listing computes nothing and agrees.
  auto again = run_cli("tasks list --json --db " + db.string());
  EXPECT_EQ(json::parse(again.out), tasks);
  fs::remove(db), fs::remove(db.string() + ".key");  // and its seal key
}

TEST(Cli, TaskFiguresMatchHandCounts) {
  // 64x256 @ 256x128: 2*64*256*128 FLOPs; bytes: x, weight, bias and output, each once.
  auto r = run_cli("tasks show " + fixture("tasks/gemm_relu.py") + " --json --no-store");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json t = json::parse(r.out);
  EXPECT_EQ(t["flops"].get<int64_t>(), 2 * 64 * 256 * 128);
  EXPECT_EQ(t["bytes"].get<int64_t>(), 4 * (64 * 256 + 128 * 256 + 128 + 64 * 128));
  // 4x8x32x32 input, 16 output channels, 3x3 kernel: 2 * out elements * Cin * 9.
  json conv = json::parse(run_cli("tasks show " + fixture("tasks/conv_bn_relu.py") + " --json --no-store").out);
  EXPECT_EQ(conv["flops"].get<int64_t>(), 2 * (4 * 16 * 32 * 32) * 8 * 9);
  auto missing = run_cli("tasks show no_such_task_anywhere --no-store");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("tasks list"), std::string::npos);
}

TEST(Cli, SpeedOfLightOnTheCpu) {
  // A two-task suite from the fixtures; the CPU's own ceilings are measured and cached.
  fs::path suite = fs::temp_directory_path() / ("cudal1_suite_" + std::to_string(::getpid()));
  fs::create_directories(suite / "level1");
  for (auto name : {"gemm_relu.py", "scale_add.py"}) fs::copy_file(fixture(std::string("tasks/") + name), suite / "level1" / name);
  fs::path db = suite / "store.db";
  auto r = run_cli("tasks list --suite " + suite.string() + " --device cpu --eager --json --db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json tasks = json::parse(r.out);
  ASSERT_EQ(tasks.size(), 2u);
  for (auto& t : tasks) {
    EXPECT_GT(t["sol_ms"].get<double>(), 0) << t["name"];
    EXPECT_GT(t["eager_ms"].get<double>(), 0) << t["name"];
    // The floor is a floor: an eager run far below it means the ceilings were mismeasured.
    EXPECT_GT(t["sol_fraction"].get<double>(), 0.0);
    EXPECT_LT(t["sol_fraction"].get<double>(), 3.0) << t.dump();
  }
  EXPECT_EQ(run_cli("tasks list --suite " + suite.string() + " --eager --db " + db.string()).exit_code, 2);
  fs::remove_all(suite);
}

// `cudal1 batch`: pairs in, one JSON line per evaluation out, a summary that adds up; a pairs
// file that names nothing usable is an error that says what to write.
TEST(Cli, BatchEvaluatesPairsOnTwoLanes) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_batch_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "pairs.jsonl")
      << json({{"id", "good"}, {"task", fixture("tasks/scale_add.py")}, {"candidate", fixture("candidates/ok_scale_add_alpha.py")}}).dump() << "\n"
      << "# a comment line\n"
      << fixture("tasks/scale_add.py") << " " << fixture("candidates/incorrect_scale_add_zeros.py") << "\n";
  CliRun r = run_cli("batch --pairs " + (dir / "pairs.jsonl").string() + " --device cpu --lanes 2 --no-timing --no-store --json --out " +
                     (dir / "out.jsonl").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json s = only_json(r.out);
  std::ifstream results(dir / "out.jsonl");
  std::string all((std::istreambuf_iterator<char>(results)), std::istreambuf_iterator<char>());
  EXPECT_EQ(s["evaluations"], 2);
  EXPECT_EQ(s["accepted"], 1) << s.dump() << "\n" << all;
  EXPECT_EQ(s["statuses"]["incorrect"], 1) << s.dump() << "\n" << all;
  EXPECT_EQ(s["lanes"].size(), 2u);
  std::ifstream out(dir / "out.jsonl");
  std::set<std::string> ids;
  for (std::string line; std::getline(out, line);) {
    json l = json::parse(line);
    ids.insert(l["id"].get<std::string>());
    // When each came back, which bench/throughput.sh reads to tell latency from rate.
    EXPECT_GT(l.value("finished_s", 0.0), 0.0) << line;
    EXPECT_LE(l.value("finished_s", 0.0), s["wall_s"].get<double>()) << line;
  }
  EXPECT_EQ(ids, (std::set<std::string>{"good", fixture("candidates/incorrect_scale_add_zeros.py")}));

  std::ofstream(dir / "bad.txt") << "only-one-path\n";
  CliRun bad = run_cli("batch --pairs " + (dir / "bad.txt").string() + " --device cpu --no-store");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("expected TASK CANDIDATE"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

namespace {

// DIR afresh, with pairs.jsonl naming the accepted scale_add file N times (ids run0, run1, ...).
void write_accepted_pairs(const fs::path& dir, int n) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream pairs(dir / "pairs.jsonl");
  for (int i = 0; i < n; ++i)
    pairs << json({{"id", "run" + std::to_string(i)}, {"task", fixture("tasks/scale_add.py")},
                   {"candidate", fixture("candidates/ok_scale_add_alpha.py")}}).dump() << "\n";
}

}  // namespace

// Ctrl-C on a long batch, as a terminal sends it (to the whole foreground process group): the
// evaluation in hand finishes and is written out, none starts after it, and the table says so.
TEST(Cli, BatchStoppedByCtrlCKeepsTheEvaluationInHand) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_batch_stop_" + std::to_string(::getpid()));
  write_accepted_pairs(dir, 6);
  fs::path out = dir / "out.jsonl";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own group, like a job a shell started in the foreground
    freopen((dir / "stdout").c_str(), "w", stdout);
    freopen((dir / "stderr").c_str(), "w", stderr);
    execl(CUDAL1_BINARY, CUDAL1_BINARY, "batch", "--pairs", (dir / "pairs.jsonl").c_str(), "--device", "cpu", "--no-timing",
          "--no-store", "--prefetch", "0", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  auto lines = [&] {
    std::ifstream f(out);
    return std::count(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>(), '\n');
  };
  // The first evaluation has come back: the second is in hand (one lane, none prepared ahead).
  for (int waited = 0; lines() < 1 && waited < 3000; ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(lines(), 1) << "the first evaluation never came back";
  ASSERT_EQ(kill(-pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  std::string err = slurp(dir / "stderr"), table = slurp(dir / "stdout");
  ASSERT_TRUE(WIFEXITED(status)) << "ended by a signal, not gently\n" << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_NE(err.find("cudal1 batch: stopping"), std::string::npos) << err;
  // Whatever ran came back whole and accepted (its workers were not interrupted), the rest never started.
  long ran = lines();
  EXPECT_GE(ran, 1);
  EXPECT_LT(ran, 6) << table;
  std::ifstream results(out);
  for (std::string line; std::getline(results, line);)
    EXPECT_TRUE(json::parse(line)["result"].value("accepted", false)) << line;
  EXPECT_NE(table.find("stopped: " + std::to_string(6 - ran) + " of 6 never started"), std::string::npos) << table;
  EXPECT_NE(table.find("stopped before it started"), std::string::npos) << table;
  fs::remove_all(dir);
}

// --finish-within: after the first evaluation (seconds, with its worker's start), a second could
// not end within 1 s, so none starts; the run says why, and the table lists the rest as not run.
TEST(Cli, BatchStartsNoEvaluationItsTimeLimitWouldCut) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_batch_limit_" + std::to_string(::getpid()));
  write_accepted_pairs(dir, 3);
  CliRun r = run_cli("batch --pairs " + (dir / "pairs.jsonl").string() +
                     " --device cpu --no-timing --no-store --prefetch 0 --finish-within 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the run must end within 1 s"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("stopped: 2 of 3 never started"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

namespace {

// A suite of small fixture tasks as the default suite of every command run meanwhile.
struct SmallSuite {
  fs::path root = fs::temp_directory_path() / ("cudal1_small_suite_" + std::to_string(::getpid()));
  SmallSuite() {
    fs::remove_all(root);
    fs::create_directories(root / "level1");
    fs::copy_file(fixture("tasks/scale_add.py"), root / "level1" / "01_scale_add.py");
    fs::copy_file(fixture("tasks/softmax_rows.py"), root / "level1" / "02_softmax_rows.py");
    fs::copy_file(fixture("tasks/relu_positive.py"), root / "level1" / "03_scale_relu.py");
    setenv("CUDAL1_TASKS_DIR", root.c_str(), 1);
  }
  ~SmallSuite() {
    unsetenv("CUDAL1_TASKS_DIR");
    fs::remove_all(root);
  }
};

// The last line of a plain-text table that starts with `first`, or "": the table comes after
// the summaries, whose lines may start with the same word ("candidate  /path/...").
std::string table_row(const std::string& out, const std::string& first) {
  std::istringstream lines(out);
  std::string found;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(first, 0) == 0) found = line;
  return found;
}

}  // namespace

// Every command that takes a task takes a suite name too, in any of its forms.
TEST(Cli, EveryCommandResolvesSuiteNames) {
  SmallSuite suite;
  fs::path dir = suite.root / "work";
  fs::create_directories(dir);
  std::string cand = fixture("candidates/ok_scale_add_alpha.py");

  auto show = run_cli("tasks show scale_add --json --no-store");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(show.out)["name"], "level1/01_scale_add");

  auto eval = run_cli("eval --task 01_scale_add --candidate " + cand + " --no-timing --no-store --json");
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(only_json(eval.out)["task"]["path"], (suite.root / "level1" / "01_scale_add.py").string());

  auto lint = run_cli("lint-task level1/01_scale_add --no-store --json");
  ASSERT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_NE(only_json(lint.out)["task"]["path"].get<std::string>().find("01_scale_add.py"), std::string::npos);

  auto baselines = run_cli("baselines scale_add --buckets 1 --calls 1 --no-store --json");
  ASSERT_EQ(baselines.exit_code, 0) << baselines.err;
  EXPECT_EQ(only_json(baselines.out)["task"], "scale_add");

  std::ofstream(dir / "pairs.txt") << "scale_add " << cand << "\n";
  auto batch = run_cli("batch --pairs " + (dir / "pairs.txt").string() + " --device cpu --no-timing --no-store --json");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  EXPECT_EQ(only_json(batch.out)["accepted"], 1);

  auto enrich = run_cli("enrich scale_add --device cpu --no-store --json --out " + (dir / "enriched").string());
  ASSERT_EQ(enrich.exit_code, 0) << enrich.err;
  EXPECT_NE(enrich.out.find("level1/01_scale_add"), std::string::npos) << enrich.out;

  auto optimize = run_cli("optimize scale_add --policy builtin --rounds 1 --group 1 --device cpu --no-timing --json --run " +
                          (dir / "run").string() + " --db " + (dir / "r.db").string());
  ASSERT_EQ(optimize.exit_code, 0) << optimize.err;
  EXPECT_EQ(only_json(optimize.out)["tasks"][0]["task"], "level1/01_scale_add") << optimize.out;
}

TEST(Cli, AnAmbiguousTaskNameListsItsCandidates) {
  SmallSuite suite;
  for (std::string command : {"tasks show s --no-store", "lint-task s --no-store", "baselines s --no-store",
                              "optimize s --device cpu", "eval --candidate x.py --no-store --task s"}) {
    auto r = run_cli(command);  // "s" is in 01_scale_add, 02_softmax_rows and 03_scale_relu
    EXPECT_EQ(r.exit_code, 3) << command << ": " << r.err;
    for (auto name : {"level1/01_scale_add", "level1/02_softmax_rows", "level1/03_scale_relu"})
      EXPECT_NE(r.err.find(name), std::string::npos) << command << ": " << r.err;
  }
  auto typo = run_cli("lint-task sacle_add --no-store");  // a typo, not a part of any name
  EXPECT_EQ(typo.exit_code, 3);
  EXPECT_NE(typo.err.find("closest names: level1/01_scale_add"), std::string::npos) << typo.err;
}

// Every task a help text gives as an example exists in the bundled suite, in the form given.
TEST(Cli, EveryHelpExampleTaskNameResolves) {
  std::vector<std::string> commands = {"eval", "lint-task", "baselines", "tasks show", "optimize", "enrich", "batch"};
  if (run_cli("train selfsup --help").exit_code == 0) commands.insert(commands.end(), {"train selfsup", "train crl"});
  const std::regex suite_name(R"(level\d+/[A-Za-z0-9_]+)"), group(R"(\(([^()]*level\d+/[^()]*)\))");
  int examples = 0;
  for (auto& command : commands) {
    auto help = run_cli(command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    std::set<std::string> names;
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), suite_name), end; it != end; ++it) names.insert(it->str());
    // "(level1/28_log_softmax, 28_log_softmax or log_softmax)": each form is an example.
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), group), end; it != end; ++it) {
      std::istringstream words(std::regex_replace((*it)[1].str(), std::regex(R"([,;:])"), " "));
      for (std::string w; words >> w;)
        if (w != "or" && w != "and" && w != "e.g." && w != "such" && w != "as") names.insert(w);
    }
    for (auto& name : names) {
      ++examples;
      EXPECT_NO_THROW(cudal1::find_task(cudal1::default_suite_dir(), name)) << command << " --help gives " << name;
    }
  }
  EXPECT_GE(examples, 6);  // the examples were found at all
}

// A CPU-only torch asked for CUDA is the interpreter's problem, said as such: a runner error that
// names the way to another Python, no traceback, and no blame on the task.
TEST(Cli, CudaWithACpuOnlyTorchSaysWhichPythonToUse) {
  std::string python = cudal1::find_python();
  if (std::system((python + " -c 'import sys, torch; sys.exit(0 if torch.version.cuda is None else 1)'").c_str()) != 0)
    GTEST_SKIP() << python << " has a CUDA build of torch";
  for (std::string command : {eval_args("scale_add.py", "ok_scale_add_alpha.py", "cuda") + " --no-store",
                              "lint-task " + fixture("tasks/scale_add.py") + " --device cuda --no-store"}) {
    auto r = run_cli(command);
    EXPECT_EQ(r.exit_code, 5) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("has no CUDA"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("CUDAL1_PYTHON"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--device cpu"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("run the task on its own"), std::string::npos) << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 3) << r.err;
  }
}

// The table after several candidates marks the store's answers: a second run of the same command
// answers from the store, and says so on every row.
TEST(Cli, TheTableMarksAnswersFromTheStore) {
  fs::path db = fs::temp_directory_path() / ("cudal1_cli_marks_" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  std::string args = eval_args("scale_add.py", "ok_scale_add_alpha.py") + " --candidate " +
                     fixture("candidates/incorrect_scale_add_zeros.py") + " --no-timing --db " + db.string();
  auto first = run_cli(args), second = run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::istringstream header(table_row(first.out, "candidate "));
  std::vector<std::string> columns{std::istream_iterator<std::string>(header), {}};
  EXPECT_NE(std::find(columns.begin(), columns.end(), "from"), columns.end()) << first.out;
  for (auto name : {"ok_scale_add_alpha.py", "incorrect_scale_add_zeros.py"}) {
    std::string fresh = table_row(first.out, name), stored = table_row(second.out, name);
    EXPECT_NE(fresh.find(" run"), std::string::npos) << first.out;
    EXPECT_EQ(fresh.find(" store"), std::string::npos) << first.out;
    EXPECT_NE(stored.find(" store"), std::string::npos) << second.out;
  }
  fs::remove(db), fs::remove(db.string() + ".key");
}

// `cudal1 bench` as a user meets it: a kernel set scored, resumed from the store, carried to a
// machine with another store, and written fit to share.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "core/hash.h"
#include "evaluator/options.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

using namespace cudal1::test;  // CliRun, run_cli, only_json, fixture

namespace {

// A kernel set named after a suite's tasks, in a folder of its own: suite/level1/NAME.py holds
// the tasks, kernels/level1/NAME.py the candidates. The folder goes with the test.
struct KernelSet {
  fs::path dir;
  explicit KernelSet(const std::string& name)
      : dir(fs::temp_directory_path() / ("cudal1_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir / "suite" / "level1");
    fs::create_directories(dir / "kernels" / "level1");
  }
  ~KernelSet() { fs::remove_all(dir); }
  // A fixture file (relative to the fixtures folder) as the suite's task NAME.py.
  void task(const std::string& rel, const std::string& name) { fs::copy_file(fixture(rel), dir / "suite" / "level1" / name); }
  void kernel(const std::string& rel, const std::string& name) { fs::copy_file(fixture(rel), dir / "kernels" / "level1" / name); }
  // "bench --folder ... --suite ...": the start of every command on this set.
  std::string bench() const { return "bench --folder " + (dir / "kernels").string() + " --suite " + (dir / "suite").string(); }
};

}  // namespace

// A kernel set named after a suite's tasks: scored once, then resumed from the store without
// evaluating again; the JSON has a row per task and the reports are written.
TEST(Cli, BenchScoresAFolderAndResumesFromTheStore) {
  KernelSet set("bench");
  const fs::path& dir = set.dir;
  for (std::string t : {"scale_add.py", "softmax_rows.py", "two_outputs.py"}) set.task("tasks/" + t, t);
  set.kernel("candidates/ok_scale_add_alpha.py", "scale_add.py");
  set.kernel("candidates/incorrect_softmax_rows_broadcast_shape.py", "softmax_rows.py");
  std::string args = set.bench() + " --device cpu --no-sol --db " + (dir / "r.db").string() + " --html " + (dir / "r.html").string() +
                     " --markdown " + (dir / "r.md").string() + " --json";
  CliRun first = run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json b = only_json(first.out);
  ASSERT_EQ(b["rows"].size(), 2u) << b.dump();  // two_outputs has no kernel in the set
  std::map<std::string, json> rows;
  for (auto& r : b["rows"]) rows[r["task"]] = r;
  EXPECT_EQ(rows["level1/scale_add"]["status"], "ok");
  EXPECT_TRUE(rows["level1/scale_add"]["speedup"].contains("eager"));
  EXPECT_EQ(rows["level1/softmax_rows"]["status"], "incorrect");
  EXPECT_TRUE(rows["level1/scale_add"]["device_name"].is_string()) << b.dump();  // the card that measured it
  EXPECT_EQ(b["mixed_provenance"], json::array());  // one machine measured every row
  EXPECT_TRUE(fs::file_size(dir / "r.html") > 1000);
  EXPECT_NE(cudal1::read_file(dir / "r.md").find("| level 1 | eager | 2 |"), std::string::npos) << cudal1::read_file(dir / "r.md");

  CliRun again = run_cli(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("2 of 2 already scored"), std::string::npos) << again.err;
  // The same rows, each marked as the store's answer.
  json resumed = only_json(again.out)["rows"];
  for (auto& row : b["rows"]) EXPECT_FALSE(row["from_store"].get<bool>()) << row.dump();
  for (auto& row : resumed) EXPECT_TRUE(row["from_store"].get<bool>()) << row.dump();
  for (auto* rows : {&resumed, &b["rows"]})
    for (auto& row : *rows) row.erase("from_store");
  EXPECT_EQ(resumed, b["rows"]);

  // A kernel the store has never seen: --stored-only reports without scoring it, and says so.
  set.kernel("candidates/ok_two_outputs_reuse.py", "two_outputs.py");
  CliRun stored = run_cli(args + " --stored-only");
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_NE(stored.err.find("2 of 3 already scored"), std::string::npos) << stored.err;
  std::map<std::string, json> listed;
  const json stored_bench = only_json(stored.out);  // named: rows of a temporary would dangle
  for (auto& r : stored_bench["rows"]) listed[r["task"]] = r;
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed["level1/two_outputs"]["status"], "not_scored");
  EXPECT_NE(listed["level1/two_outputs"].value("reason", "").find("without --stored-only"), std::string::npos);
  EXPECT_TRUE(listed["level1/two_outputs"]["flags"].empty());
  EXPECT_NE(stored.out.find("\"not_scored\""), std::string::npos);
  EXPECT_TRUE(listed["level1/scale_add"]["from_store"].get<bool>());
  EXPECT_NE(run_cli(args + " --stored-only --force").exit_code, 0);  // nothing to score again
  // Asked for every GPU on a store that holds CPU results only: a clear error, not a GPU probe.
  CliRun no_cuda = run_cli(set.bench() + " --device cuda --stored-only --no-sol --db " + (dir / "r.db").string());
  EXPECT_NE(no_cuda.exit_code, 0);
  EXPECT_NE(no_cuda.err.find("holds no result measured on a CUDA device"), std::string::npos) << no_cuda.err;

  CliRun bad = run_cli("bench --device cpu --no-sol --db " + (dir / "r.db").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--jsonl"), std::string::npos) << bad.err;
}

// A KernelBench run folder, as its generation scripts write it: each problem's kernel of the
// chosen sample scored against the suite task of that number.
TEST(Cli, BenchScoresAKernelBenchRunFolder) {
  KernelSet set("bench_kb");
  const fs::path& dir = set.dir;
  set.task("tasks/scale_add.py", "1_scale_add.py");
  set.task("tasks/softmax_rows.py", "2_softmax_rows.py");
  fs::create_directories(dir / "runs" / "r1");
  fs::copy_file(fixture("candidates/ok_scale_add_alpha.py"), dir / "runs" / "r1" / "level_1_problem_1_sample_0_kernel.py");
  fs::copy_file(fixture("candidates/incorrect_softmax_rows_broadcast_shape.py"),
                dir / "runs" / "r1" / "level_1_problem_2_sample_1_kernel.py");
  std::string args = "bench --folder " + (dir / "runs" / "r1").string() + " --suite " + (dir / "suite").string() +
                     " --device cpu --no-sol --no-baselines --db " + (dir / "r.db").string() + " --json";
  CliRun zero = run_cli(args);
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  json rows = only_json(zero.out)["rows"];
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0]["task"], "level1/1_scale_add");
  EXPECT_EQ(rows[0]["status"], "ok");
  CliRun one = run_cli(args + " --sample 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  rows = only_json(one.out)["rows"];
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0]["task"], "level1/2_softmax_rows");
  EXPECT_EQ(rows[0]["status"], "incorrect");
}

// A set scored over several machines, each given back with its disk: the bench JSON of one run
// carries its verdicts to the next, which has another store (--rows-from). A row is taken only
// for the same files under the same protocol; a kernel changed since is scored again.
TEST(Cli, BenchCarriesScoredRowsToARunWithAnotherStore) {
  KernelSet kernels("bench_carry");
  const fs::path& dir = kernels.dir;
  for (std::string t : {"scale_add.py", "softmax_rows.py"}) kernels.task("tasks/" + t, t);
  kernels.kernel("candidates/ok_scale_add_alpha.py", "scale_add.py");
  kernels.kernel("candidates/incorrect_softmax_rows_broadcast_shape.py", "softmax_rows.py");
  const std::string set = kernels.bench() + " --device cpu --no-sol --no-baselines --json";
  CliRun first = run_cli(set + " --db " + (dir / "first.db").string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const json earlier = only_json(first.out);
  std::ofstream(dir / "earlier.json") << earlier.dump();
  for (auto& row : earlier["rows"]) {
    EXPECT_EQ(row["task_hash"].get<std::string>().size(), 64u) << row.dump();
    EXPECT_TRUE(row["provenance"].contains("protocol_key")) << row.dump();
  }

  // A new store, as on the next machine: every row from the file, none scored.
  const std::string next = set + " --db " + (dir / "next.db").string() + " --rows-from " + (dir / "earlier.json").string() +
                           " --markdown " + (dir / "next.md").string();
  CliRun carried = run_cli(next + " --stored-only");
  ASSERT_EQ(carried.exit_code, 0) << carried.err;
  EXPECT_NE(carried.err.find("2 taken from --rows-from"), std::string::npos) << carried.err;
  json bench = only_json(carried.out);
  EXPECT_EQ(bench["carried_rows"]["count"], 2);
  ASSERT_EQ(bench["rows"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    json row = bench["rows"][i], before = earlier["rows"][i];
    EXPECT_EQ(row["carried_from"], (dir / "earlier.json").string());
    for (json* r : {&row, &before}) r->erase("carried_from"), r->erase("from_store");
    EXPECT_EQ(row, before);  // as the earlier run wrote it
  }
  EXPECT_NE(cudal1::read_file(dir / "next.md").find("2 rows were taken"), std::string::npos);
  EXPECT_NE(carried.err.find("earlier.json: 2 rows, 2 with a verdict that can be carried, 2 taken"), std::string::npos)
      << carried.err;
  // The CPU's figures never answer for a GPU: on a store without results, every row is left unscored.
  CliRun on_cuda = run_cli(kernels.bench() + " --device cuda --stored-only --no-sol --json --db " + (dir / "next.db").string() +
                           " --rows-from " + (dir / "earlier.json").string());
  ASSERT_EQ(on_cuda.exit_code, 0) << on_cuda.err;
  EXPECT_NE(on_cuda.err.find("2 with a verdict that can be carried, 0 taken"), std::string::npos) << on_cuda.err;
  const json on_cuda_bench = only_json(on_cuda.out);
  for (auto& row : on_cuda_bench["rows"]) EXPECT_EQ(row["status"], "not_scored") << row.dump();

  // One kernel changed: its row is not the file's any more, so it is scored; the other is still carried.
  std::ofstream(dir / "kernels" / "level1" / "scale_add.py", std::ios::app) << "\n# changed\n";
  CliRun changed = run_cli(next);
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_NE(changed.err.find("1 taken from --rows-from"), std::string::npos) << changed.err;
  std::map<std::string, json> rows;
  const json changed_bench = only_json(changed.out);  // named: rows of a temporary would dangle
  for (auto& r : changed_bench["rows"]) rows[r["task"]] = r;
  EXPECT_FALSE(rows["level1/scale_add"].contains("carried_from"));
  EXPECT_EQ(rows["level1/scale_add"]["status"], "ok");
  EXPECT_FALSE(rows["level1/scale_add"]["from_store"].get<bool>());  // measured by this run
  EXPECT_TRUE(rows["level1/softmax_rows"].contains("carried_from"));
  // --force scores everything again: the file answers for nothing.
  CliRun forced = run_cli(next + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("0 taken"), std::string::npos) << forced.err;
  const json forced_bench = only_json(forced.out);
  for (auto& r : forced_bench["rows"]) EXPECT_FALSE(r.contains("carried_from")) << r.dump();

  std::ofstream(dir / "not_bench.json") << "[1, 2]";
  CliRun bad = run_cli(set + " --db " + (dir / "next.db").string() + " --rows-from " + (dir / "not_bench.json").string());
  EXPECT_EQ(bad.exit_code, 3) << bad.err;  // input
  EXPECT_NE(bad.err.find("is not a bench JSON"), std::string::npos) << bad.err;
}

// A new protocol version scores the set again, unless the person carries the earlier version's
// rows by name: they are then taken, and the report counts them under their own protocol.
TEST(Cli, BenchTakesAnEarlierProtocolsRowsOnlyWhenNamed) {
  KernelSet kernels("bench_carry_protocol");
  const fs::path& dir = kernels.dir;
  kernels.task("tasks/scale_add.py", "scale_add.py");
  kernels.kernel("candidates/ok_scale_add_alpha.py", "scale_add.py");
  const std::string set = kernels.bench() + " --device cpu --no-sol --no-baselines --json";
  CliRun first = run_cli(set + " --db " + (dir / "first.db").string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json earlier = only_json(first.out);
  const std::string current = cudal1::kProtocolVersion, old = "cudal1-eval/1";
  for (auto& row : earlier["rows"]) {
    std::string key = row["provenance"]["protocol_key"];
    ASSERT_EQ(key.rfind(current, 0), 0u) << key;
    row["provenance"]["protocol_key"] = old + key.substr(current.size());
    row["provenance"]["protocol"] = old;
  }
  std::ofstream(dir / "old.json") << earlier.dump();
  const std::string next = set + " --stored-only --db " + (dir / "next.db").string() + " --rows-from " + (dir / "old.json").string();

  CliRun plain = run_cli(next);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("1 with a verdict that can be carried, 0 taken"), std::string::npos) << plain.err;

  CliRun named = run_cli(next + " --rows-from-protocol " + old);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.err.find("1 taken from --rows-from"), std::string::npos) << named.err;
  const json bench = only_json(named.out);
  ASSERT_EQ(bench["rows"].size(), 1u);
  EXPECT_EQ(bench["rows"][0]["status"], "ok");
  EXPECT_EQ(bench["rows"][0]["provenance"]["protocol"], old);

  CliRun same = run_cli(next + " --rows-from-protocol " + current);
  EXPECT_EQ(same.exit_code, 2) << same.err;  // usage
  EXPECT_NE(same.err.find("is not an earlier protocol version"), std::string::npos) << same.err;
  CliRun alone = run_cli(set + " --stored-only --db " + (dir / "next.db").string() + " --rows-from-protocol " + old);
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_NE(alone.err.find("add --rows-from"), std::string::npos) << alone.err;
}

// The speed-of-light column of a suite where one task does not even import: that task's row says
// why it failed, and the others still get their fraction (one missing module must not cost the
// column of a 200-task report).
TEST(Cli, BenchSpeedOfLightSkipsATaskThatDoesNotLoad) {
  KernelSet set("bench_sol");
  set.task("tasks/scale_add.py", "scale_add.py");
  set.task("bad_tasks/import_fails.py", "import_fails.py");
  set.kernel("candidates/ok_scale_add_alpha.py", "scale_add.py");
  set.kernel("candidates/ok_scale_add_alpha.py", "import_fails.py");
  CliRun r = run_cli(set.bench() + " --device cpu --no-baselines --db " + (set.dir / "r.db").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json bench = only_json(r.out);
  std::map<std::string, json> rows;
  for (auto& row : bench["rows"]) rows[row["task"]] = row;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows["level1/scale_add"]["status"], "ok");
  EXPECT_GT(rows["level1/scale_add"].value("sol_fraction", 0.0), 0.0) << rows["level1/scale_add"].dump() << r.err;
  EXPECT_NE(rows["level1/import_fails"]["status"], "ok");
  EXPECT_FALSE(rows["level1/import_fails"].contains("sol_fraction"));
}

// A verdict file to commit beside a report on someone else's kernels: with --error-first-lines a
// row's error is its first line, not the traceback that quotes the candidate's code, and the file
// still carries the verdict to a run with another store.
TEST(Cli, BenchErrorFirstLinesQuoteNoCodeAndStillCarry) {
  KernelSet kernels("bench_first_lines");
  const fs::path& dir = kernels.dir;
  kernels.task("tasks/gemm_relu.py", "gemm_relu.py");
  kernels.kernel("candidates/runtime_error_forward_raises.py", "gemm_relu.py");
  const std::string source_line = "raise RuntimeError(\"fixture: deliberate failure in forward";  // the candidate's own
  const std::string set = kernels.bench() + " --device cpu --no-sol --no-baselines --json --db ";
  CliRun whole = run_cli(set + (dir / "first.db").string());
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const json row = only_json(whole.out)["rows"][0];
  ASSERT_EQ(row["status"], "runtime_error") << row.dump();
  const std::string error = row["error"], first_line = error.substr(0, error.find('\n'));
  EXPECT_NE(first_line.find("RuntimeError: fixture: deliberate failure in forward"), std::string::npos) << error;
  EXPECT_NE(error.find(source_line), std::string::npos) << error;  // where the candidate failed, for its author

  CliRun cut = run_cli(set + (dir / "first.db").string() + " --stored-only --error-first-lines --markdown " +
                       (dir / "cut.md").string());
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_EQ(cut.out.find(source_line), std::string::npos) << cut.out;
  EXPECT_EQ(cudal1::read_file(dir / "cut.md").find(source_line), std::string::npos);
  const json shared = only_json(cut.out);
  json cut_row = shared["rows"][0], whole_row = row;
  EXPECT_EQ(cut_row["error"], first_line);
  for (json* r : {&cut_row, &whole_row}) r->erase("error"), r->erase("from_store");
  EXPECT_EQ(cut_row, whole_row);  // nothing else changed
  std::ofstream(dir / "shared.json") << shared.dump(1);  // pretty-printed, as a person might keep it

  CliRun carried = run_cli(set + (dir / "next.db").string() + " --stored-only --rows-from " + (dir / "shared.json").string());
  ASSERT_EQ(carried.exit_code, 0) << carried.err;
  EXPECT_NE(carried.err.find("1 taken from --rows-from"), std::string::npos) << carried.err;
  const json next = only_json(carried.out);
  EXPECT_EQ(next["rows"][0]["status"], "runtime_error");
  EXPECT_EQ(next["rows"][0]["error"], first_line);
}

// The CUDA Graph version of a task, run for real: imported by Python, judged by the evaluator,
// and `cudal1 enrich` end to end. Built twice: for the CPU (make test), where ModelNew's eager
// fallback must match Model and enrich must verify nothing, and, labelled gpu, for CUDA
// (scripts/gpu_check.sh), where the graph path itself must be accepted and a task that cannot
// be captured must be reported with the reason.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "baselines/graph_task.h"
#include "core/hash.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "runner/python.h"

using namespace cudal1;
namespace fs = std::filesystem;
using json = nlohmann::json;

#ifndef CUDAL1_TEST_DEVICE
#define CUDAL1_TEST_DEVICE "cpu"
#endif

namespace {

const bool kCuda = std::string(CUDAL1_TEST_DEVICE) != "cpu";

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("cudal1-graph-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

struct Command {
  int exit_code;
  std::string out;
};

// A command's exit status and stdout (stderr folded in when `with_stderr`).
Command run(const std::string& cmd, bool with_stderr = false) {
  FILE* p = popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  Command r{-1, ""};
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A task whose forward reads a value back to the host: fine eagerly, impossible to capture.
const char* kHostSyncTask = R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales by the input's largest magnitude, read back to the host (a sync: not capturable)."""

    def forward(self, x):
        return x / float(x.abs().max())


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
)PY";

// `strict`: the graph code raises where it would fall back to eager (as `enrich` runs it).
EvalResult verify(const fs::path& task, const fs::path& candidate, bool strict = false) {
  EvalOptions o;
  if (strict) o.extra_env[kGraphStrictEnv] = "1";
  o.task_path = task.string();
  o.candidate_path = candidate.string();
  o.device = CUDAL1_TEST_DEVICE;
  o.timing = false;
  o.lint = false;
  o.call_timeout_s = 60;
  return evaluate(o);
}

std::vector<json> jsonl(const fs::path& file) {
  std::vector<json> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

}  // namespace

// Several outputs, init arguments, batch norm in training mode, two inputs and a scalar init:
// on the CPU ModelNew runs the eager Model and must be accepted like it; on CUDA, with the strict
// switch on, only a replayed graph can be accepted.
TEST(GraphTaskEval, TheEvaluatorAcceptsTheGraphVersion) {
  fs::path dir = temp_dir("accept");
  for (const char* name : {"two_outputs", "conv_bn_relu", "scale_add"}) {
    fs::path task = fixtures_dir() / "tasks" / (std::string(name) + ".py");
    fs::path file = dir / (std::string(name) + "_graph.py");
    write(file, graph_task_source(name, read_file(task)));
    EvalResult r = verify(task, file, kCuda);
    std::string flags;
    for (auto& f : r.flags) flags += " " + f.id;
    EXPECT_TRUE(r.accepted) << name << ": " << status_name(r.status) << " " << r.error << flags;
    EXPECT_EQ(r.correctness["cases"].size(), 6u) << name;
  }
  fs::remove_all(dir);
}

// What the evaluator never varies: several call signatures on one instance (each its own graph
// on CUDA), a non-tensor argument that changes, and outputs kept across calls (returned as
// clones, so a later replay does not overwrite them). ModelNew must match Model in every call.
TEST(GraphTaskEval, SignaturesAndKeptOutputsMatchEager) {
  fs::path dir = temp_dir("signatures");
  const std::string task = R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x, k):
        return self.linear(x) * k, x.sum()


def get_inputs():
    return [torch.randn(4, 32), 2]


def get_init_inputs():
    return [32]
)PY";
  write(dir / "sig_graph.py", graph_task_source("sig", task));
  write(dir / "check.py", std::string(R"PY(import importlib.util, sys
import torch
spec = importlib.util.spec_from_file_location("sig_graph", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
device = torch.device(sys.argv[2])
torch.manual_seed(0)
ref = m.Model(*m.get_init_inputs()).to(device)
torch.manual_seed(0)
new = m.ModelNew(*m.get_init_inputs()).to(device)
calls = [(torch.randn(4, 32), 2), (torch.randn(4, 32), 2), (torch.randn(4, 32), 3), (torch.randn(9, 32), 2),
         (torch.randn(4, 32), 2)]
kept = []
with torch.no_grad():
    for x, k in calls:
        x = x.to(device)
        kept.append((ref(x, k), new(x, k)))
for i, (want, got) in enumerate(kept):
    for w, g in zip(want, got):
        assert torch.allclose(w, g, atol=1e-5, rtol=1e-5), f"call {i} differs"
graphs = len(new._cudal1_graphs)
assert graphs == (3 if device.type == "cuda" else 0), f"{graphs} graphs captured"
print("OK", graphs)
)PY"));
  std::string python = find_python();
  Command r = run(python + " " + (dir / "check.py").string() + " " + (dir / "sig_graph.py").string() + " " +
                  (kCuda ? "cuda" : "cpu"),
              true);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// `cudal1 enrich` over the fixture tasks. On the CPU: exit 0, nothing verified, every task
// reported with the CUDA reason and its file kept under _failed/. On CUDA: every fixture task
// verified and moved out of _failed/.
TEST(GraphTaskEval, EnrichWritesEveryTaskAndSaysWhichAreVerified) {
  fs::path out = temp_dir("enrich");
  fs::path suite = fixtures_dir() / "tasks";
  Command r = run(std::string(CUDAL1_BINARY) + " enrich " + suite.string() + " --out " + out.string() + " --device " +
              CUDAL1_TEST_DEVICE + " --no-store --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json summary = json::parse(r.out);
  std::size_t tasks = 0;
  for (auto& f : fs::directory_iterator(suite)) tasks += f.path().extension() == ".py";
  EXPECT_EQ(summary["tasks"].get<std::size_t>(), tasks);
  std::vector<json> rows = jsonl(out / "enrich.jsonl");
  ASSERT_EQ(rows.size(), tasks);
  for (auto& row : rows) {
    std::string name = row["task"];
    std::string file = row["file"];
    EXPECT_EQ(row["task_sha256"], sha256_hex(read_file(suite / (name + ".py")))) << name;
    if (kCuda) {
      EXPECT_TRUE(row["generated"].get<bool>()) << row.dump();
      EXPECT_EQ(file, name + ".py");
      EXPECT_FALSE(fs::exists(out / "_failed" / (name + ".py"))) << name;
    } else {
      EXPECT_FALSE(row["generated"].get<bool>()) << name;
      EXPECT_NE(row["reason"].get<std::string>().find("CUDA graphs need a CUDA device"), std::string::npos) << row.dump();
      EXPECT_EQ(file, "_failed/" + name + ".py");
      EXPECT_FALSE(fs::exists(out / (name + ".py"))) << "an unverified file among the verified ones: " << name;
    }
    ASSERT_TRUE(fs::exists(out / file)) << file;
    EXPECT_NE(read_file(out / file).find(read_file(suite / (name + ".py"))), std::string::npos) << file;
  }
  EXPECT_EQ(summary["generated"].get<std::size_t>(), kCuda ? tasks : 0u);
  EXPECT_NE(summary["summary"].get<std::string>().find(
                std::to_string(kCuda ? tasks : 0) + " of " + std::to_string(tasks) + " tasks have a verified CUDA Graph version"),
            std::string::npos)
      << summary["summary"];
  fs::remove_all(out);
}

// A task that cannot be captured: ModelNew still gives the right answer (eager fallback), so a
// plain evaluation accepts it; `cudal1 enrich` must not, and must say capture failed. On the CPU
// nothing is captured, and a file that is not a task is reported as such.
TEST(GraphTaskEval, ATaskThatCannotBeCapturedIsNotGenerated) {
  fs::path suite = temp_dir("uncapturable"), out = suite / "out";
  write(suite / "level1" / "host_sync.py", kHostSyncTask);
  write(suite / "level1" / "not_a_task.py", "import torch\n\ndef get_inputs():\n    return []\n");
  fs::path file = suite / "host_sync_graph.py";
  write(file, graph_task_source("level1/host_sync", kHostSyncTask));
  EvalResult plain = verify(suite / "level1" / "host_sync.py", file);
  EXPECT_TRUE(plain.accepted) << status_name(plain.status) << " " << plain.error;
  fs::remove(file);

  Command r = run(std::string(CUDAL1_BINARY) + " enrich " + suite.string() + " --out " + out.string() + " --device " +
              CUDAL1_TEST_DEVICE + " --no-store");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 of 2 tasks have a verified CUDA Graph version; reasons for the rest:"), std::string::npos) << r.out;
  std::vector<json> rows = jsonl(out / "enrich.jsonl");
  ASSERT_EQ(rows.size(), 2u);
  for (auto& row : rows) {
    EXPECT_FALSE(row["generated"].get<bool>()) << row.dump();
    std::string reason = row["reason"];
    if (row["task"] == "level1/not_a_task") {
      EXPECT_EQ(reason, "not a KernelBench task") << row.dump();
      EXPECT_TRUE(row["file"].is_null());
    } else if (kCuda) {
      EXPECT_EQ(reason.rfind("CUDA graph capture failed", 0), 0u) << row.dump();
      EXPECT_EQ(row["status"], "runtime_error") << row.dump();
      EXPECT_TRUE(fs::exists(out / "_failed" / "level1" / "host_sync.py"));
    } else {
      EXPECT_NE(reason.find("CUDA graphs need a CUDA device"), std::string::npos) << row.dump();
    }
  }
  EXPECT_FALSE(fs::exists(out / "level1" / "host_sync.py"));
  fs::remove_all(suite);
}

// A suite verified over several machines: the enrich.jsonl one returns carries its verdicts to the
// next run (--lines-from), on the CPU as well. A verdict is taken only for the same task and the
// same generated file under the same protocol, from a CUDA device, and never a machine's failure;
// the lines here stand for a GPU's, written by hand from this run's own hashes and protocol.
TEST(GraphTaskEval, EnrichTakesVerdictsCarriedFromAnotherMachine) {
  fs::path suite = temp_dir("carried"), out = suite / "out", again = suite / "again";
  const std::vector<std::string> names = {"relu_positive", "scale_add", "softmax_rows", "two_outputs",
                                          "gemm_relu", "row_loop_norm", "zero_scale_large"};
  fs::create_directories(suite / "tasks");
  for (auto& n : names) fs::copy_file(fixtures_dir() / "tasks" / (n + ".py"), suite / "tasks" / (n + ".py"));
  const std::string enrich = std::string(CUDAL1_BINARY) + " enrich " + (suite / "tasks").string() + " --device cpu --no-store";
  Command first = run(enrich + " --out " + out.string());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  std::vector<json> lines = jsonl(out / "enrich.jsonl");
  ASSERT_EQ(lines.size(), names.size());
  std::ofstream carried(suite / "carried.jsonl");
  for (auto& line : lines) {
    ASSERT_EQ(line["candidate_sha256"], sha256_hex(read_file(out / line["file"].get<std::string>()))) << line.dump();
    // The key the GPU's verification is stored under: strict graphs, nothing timed.
    const std::string key = line["protocol_key"];
    EXPECT_NE(key.find(";timing=off"), std::string::npos) << key;
    EXPECT_NE(key.find(";env:CUDA_GRAPH_STRICT=1;enrich=graph-task/"), std::string::npos) << key;
    EXPECT_TRUE(key.ends_with(";strict")) << key;
    json verdict = line;
    verdict["device"] = "cuda", verdict["device_name"] = "NVIDIA H200";
    verdict["flags"] = json::array();
    verdict["status"] = "ok", verdict["accepted"] = true;
    const std::string task = line["task"];
    if (task == "softmax_rows")
      verdict["status"] = "runtime_error", verdict["accepted"] = false,
      verdict["error"] = "CUDA graph capture failed: operation not permitted when stream is capturing";
    if (task == "two_outputs") verdict["candidate_sha256"] = std::string(64, '0');  // another generated file
    if (task == "gemm_relu") verdict["status"] = "crash", verdict["accepted"] = false,
                             verdict["infrastructure"] = {{"cause", "out_of_memory"}};  // the machine's failure
    if (task == "row_loop_norm") verdict["protocol_key"] = key + ";buckets=3";                  // another protocol
    if (task == "zero_scale_large") verdict["device"] = "cpu";                                  // not verified on a GPU
    carried << verdict.dump() << "\n";
  }
  carried << "\n" << json{{"task", "scale_add"}, {"generated", false}}.dump() << "\n";  // no verdict: never taken
  carried.close();

  Command second = run(enrich + " --out " + again.string() + " --lines-from " + (suite / "carried.jsonl").string() + " --json", true);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("8 lines, 5 with a verdict from a CUDA device, 3 taken"), std::string::npos) << second.out;
  std::map<std::string, json> rows;
  for (auto& row : jsonl(again / "enrich.jsonl")) rows[row["task"]] = row;
  for (const std::string name : {"relu_positive", "scale_add"}) {
    EXPECT_TRUE(rows[name]["generated"].get<bool>()) << rows[name].dump();
    EXPECT_EQ(rows[name]["carried_from"], (suite / "carried.jsonl").string());
    EXPECT_EQ(rows[name]["device"], "cuda") << rows[name].dump();  // where it was verified, not this run's cpu
    EXPECT_EQ(rows[name]["device_name"], "NVIDIA H200") << rows[name].dump();
    EXPECT_TRUE(fs::exists(again / (name + ".py"))) << name;  // verified elsewhere: among the verified files
  }
  EXPECT_FALSE(rows["softmax_rows"]["generated"].get<bool>());
  EXPECT_EQ(rows["softmax_rows"]["reason"].get<std::string>().rfind("CUDA graph capture failed", 0), 0u) << rows["softmax_rows"].dump();
  EXPECT_FALSE(fs::exists(again / "softmax_rows.py"));
  for (const std::string name : {"two_outputs", "gemm_relu", "row_loop_norm", "zero_scale_large"}) {
    EXPECT_FALSE(rows[name].contains("carried_from")) << rows[name].dump();
    EXPECT_NE(rows[name]["reason"].get<std::string>().find("CUDA graphs need a CUDA device"), std::string::npos) << name;
  }

  std::ofstream(suite / "broken.jsonl") << "{\"task\": 1}\nnot json\n";
  Command bad = run(enrich + " --out " + again.string() + " --lines-from " + (suite / "broken.jsonl").string(), true);
  EXPECT_EQ(bad.exit_code, 3) << bad.out;
  EXPECT_NE(bad.out.find("line 2 is not a JSON object"), std::string::npos) << bad.out;
  fs::remove_all(suite);
}

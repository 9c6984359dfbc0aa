// The built-in rewrite policy: which rewrites apply to a task, labels, what it learns from
// exemplars, determinism, no repeats, and every answer a parseable answer whose file is valid
// Python that, on the CPU with its fallbacks active, computes what the task's Model computes.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "policy/response.h"
#include "policy/rewrite_policy.h"

using namespace cudal1;
using namespace cudal1::policy;
namespace fs = std::filesystem;

namespace {

const std::string kConvTask = R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) * 0.5


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return [3, 8, 3]
)PY";

const std::string kMatmulReluTask = R"PY(import torch
import torch.nn as nn

M, K, N = 32, 64, 48  # sizes the task fixes


class Model(nn.Module):
    """Matmul then ReLU."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        # nn.Conv2d would be another task
        return torch.relu(torch.matmul(A, B))


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
)PY";

// An int among the inputs and a constant among the init inputs.
const std::string kConstantInputTask = R"PY(import torch
import torch.nn as nn

SCALE = 0.25


class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x, dim):
        y = self.linear(x) * self.scale
        return y, torch.sum(y, dim=dim)


def get_inputs():
    return [torch.randn(4, 16), 1]


def get_init_inputs():
    return [16, SCALE]
)PY";

// A view over a convolution's output: NCHW strides assumed, so channels_last must give way.
const std::string kConvViewTask = R"PY(import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(x.view(x.size(0), -1))


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
)PY";

// A 2-D convolution next to a 5-D parameter, which cannot be NHWC: channels_last gives way at once.
const std::string kConvWith5dParameterTask = R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.scale = nn.Parameter(torch.rand(1, 4, 1, 1, 1))

    def forward(self, x):
        return self.conv(x) * self.scale[..., 0]


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
)PY";

// A weight the forward rebuilds from parameters alone on every call (a low-rank update merged in):
// what a frozen trace computes once.
const std::string kMergedWeightTask = R"PY(import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features, rank):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features))
        self.a = nn.Parameter(torch.randn(rank, features))
        self.b = nn.Parameter(torch.randn(features, rank))

    def forward(self, x):
        return F.linear(x, self.weight + 0.5 * (self.b @ self.a))


def get_inputs():
    return [torch.randn(3, 16)]


def get_init_inputs():
    return [16, 2]
)PY";

// A branch on a tensor's value: a trace would keep one side only.
const std::string kValueBranchTask = R"PY(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x


def get_inputs():
    return [torch.randn(4) + 0.1]


def get_init_inputs():
    return []
)PY";

PolicyRequest request_for(const std::string& task_id, const std::string& reference, int count, uint64_t seed = 1) {
  PolicyRequest r;
  r.task_id = task_id;
  r.task_path = task_id + ".py";
  r.reference = reference;
  r.device = "cuda";
  r.count = count;
  r.seed = seed;
  return r;
}

std::vector<std::string> labels_of(const std::vector<PolicyAnswer>& answers) {
  std::vector<std::string> labels;
  for (auto& a : answers) labels.push_back(a.label);
  return labels;
}

bool contains(const std::string& label, Rewrite r) {
  auto c = parse_combination_label(label);
  return c && c->has(r);
}

// Every allowed combination of the rewrites that apply to `reference`.
std::vector<Combination> allowed_combinations(const std::string& reference) {
  std::vector<Combination> all;
  Combination applicable = applicable_rewrites(reference);
  for (unsigned bits = 1; bits < (1u << std::size(kAllRewrites)); ++bits)
    if (combination_allowed({bits}) && applicable.contains_all({bits})) all.push_back({bits});
  return all;
}

// Every answer the policy gives for one task, over as many calls as it takes.
std::vector<PolicyAnswer> every_answer(const std::string& task_id, const std::string& reference) {
  RewritePolicy policy;
  std::vector<PolicyAnswer> all;
  for (int round = 0; round < 50; ++round) {
    auto answers = policy.answer(request_for(task_id, reference, 3, round));
    if (answers.empty()) break;
    all.insert(all.end(), answers.begin(), answers.end());
  }
  return all;
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// $CUDAL1_PYTHON, else the first of python3 and /usr/bin/python3 that has torch; "" if none.
std::string python_with_torch() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CUDAL1_PYTHON"); env && *env) candidates.push_back(env);
  candidates.insert(candidates.end(), {"python3", "/usr/bin/python3"});
  for (auto& python : candidates)
    if (run("'" + python + "' -c 'import importlib.util,sys; sys.exit(0 if importlib.util.find_spec(\"torch\") else 1)'").status == 0)
      return python;
  return {};
}

fs::path write_files(const std::string& dir_name, const std::vector<std::pair<std::string, std::string>>& files) {
  fs::path dir = fs::temp_directory_path() / ("cudal1_rewrite_test_" + dir_name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (auto& [name, text] : files) std::ofstream(dir / name, std::ios::binary) << text;
  return dir;
}

// Imports each candidate file and compares ModelNew against Model on three calls, seeded alike.
// Prints whether torch has torch.compile, then per file the state its fallbacks ended in, and
// exits 1 on any mismatch.
const char* kCompareScript = R"PY(import importlib.util, sys
import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for v in out for t in tensors(v)] if isinstance(out, (list, tuple)) else []


print("torch.compile:", "yes" if hasattr(torch, "compile") else "no")
bad = 0
for i, path in enumerate(sys.argv[1:]):
    m = load(path, f"candidate_{i}")
    init = m.get_init_inputs()
    torch.manual_seed(1)
    reference = m.Model(*init)
    torch.manual_seed(1)
    candidate = m.ModelNew(*init)
    for call in range(3):
        torch.manual_seed(10 + call)
        inputs = m.get_inputs()
        with torch.no_grad():
            want, got = tensors(reference(*inputs)), tensors(candidate(*inputs))
        same = len(want) == len(got) and all(
            w.shape == g.shape and w.dtype == g.dtype and w.is_contiguous() == g.is_contiguous()
            and torch.allclose(w, g, rtol=1e-4, atol=1e-5) for w, g in zip(want, got))
        if not same:
            bad += 1
            print("MISMATCH", path, "call", call)
    state = {}
    for module in candidate.modules():
        if hasattr(module, "_cudal1_nhwc"):
            state["nhwc"] = module._cudal1_nhwc
        if "_cudal1_compiled" in vars(module):
            state["compiled"] = module._cudal1_compiled is not None
            state["compile_error"] = (module._cudal1_compile_error or "")[:300]
        if "_cudal1_frozen" in vars(module):
            frozen = list(module._cudal1_frozen.values())
            state["frozen"] = [f is not None for f in frozen]
            state["matmul_left"] = any(n.kind() == "aten::matmul" for f in frozen if f is not None for n in f.graph.nodes())
            # With gradients on, the parameters stay parameters: the output keeps its autograd history.
            torch.manual_seed(99)
            inputs = m.get_inputs()
            want, got = tensors(reference(*inputs)), tensors(candidate(*inputs))
            state["grad_kept"] = [g.requires_grad for g in got] == [w.requires_grad for w in want]
    print("checked", path.rsplit("/", 1)[-1], state)
sys.exit(1 if bad else 0)
)PY";

}  // namespace

TEST(RewritePolicy, ApplicabilityFollowsTheReferenceSource) {
  EXPECT_EQ(combination_label(applicable_rewrites(kConvTask)),
            "graph+channels_last+cudnn_benchmark+compile+compile_reduce_overhead+torchscript");
  // No convolution (the ones in comments do not count): no layout or cuDNN rewrite.
  EXPECT_EQ(combination_label(applicable_rewrites(kMatmulReluTask)), "graph+compile+compile_reduce_overhead+torchscript");
  // A 3-D convolution's weights cannot be NHWC; cuDNN autotuning still applies.
  std::string conv3d = kConvTask;
  conv3d.replace(conv3d.find("nn.Conv2d"), 9, "nn.Conv3d");
  EXPECT_EQ(combination_label(applicable_rewrites(conv3d)), "graph+cudnn_benchmark+compile+compile_reduce_overhead+torchscript");
  // A functional 2-D convolution counts too.
  std::string functional = kMatmulReluTask;
  functional.replace(functional.find("torch.matmul(A, B)"), 18, "torch.nn.functional.conv2d(A, B)");
  EXPECT_TRUE(applicable_rewrites(functional).has(Rewrite::channels_last));
  // A forward that reads a value back to the host cannot be captured: no graph. The same call
  // outside forward (in __init__) does not matter.
  std::string host_sync = kConvTask;
  host_sync.replace(host_sync.find("return torch.relu"), 6, "s = x.sum().item()\n        return");
  EXPECT_FALSE(applicable_rewrites(host_sync).has(Rewrite::graph));
  std::string init_sync = kConvTask;
  init_sync.replace(init_sync.find("self.bn = "), 0, "self.n = torch.ones(1).item()\n        ");
  EXPECT_TRUE(applicable_rewrites(init_sync).has(Rewrite::graph));
  // A rewrite that does not apply is never proposed.
  for (auto& a : every_answer("matmul", kMatmulReluTask)) {
    EXPECT_FALSE(contains(a.label, Rewrite::channels_last)) << a.label;
    EXPECT_FALSE(contains(a.label, Rewrite::cudnn_benchmark)) << a.label;
  }
  for (auto& a : every_answer("sync", host_sync)) EXPECT_FALSE(contains(a.label, Rewrite::graph)) << a.label;
}

TEST(RewritePolicy, LabelsAreCanonicalDistinctAndCarriedByTheFile) {
  EXPECT_EQ(combination_label(Combination{}.with(Rewrite::channels_last).with(Rewrite::graph)), "graph+channels_last");
  EXPECT_EQ(parse_combination_label("channels_last+graph"), parse_combination_label("graph+channels_last"));
  EXPECT_FALSE(parse_combination_label("").has_value());
  EXPECT_FALSE(parse_combination_label("graph+").has_value());
  EXPECT_FALSE(parse_combination_label("graph+graph").has_value());
  EXPECT_FALSE(parse_combination_label("gpt-4o").has_value());
  EXPECT_FALSE(parse_combination_label("compile+compile_reduce_overhead").has_value());
  EXPECT_FALSE(parse_combination_label("graph+compile_reduce_overhead").has_value());
  EXPECT_TRUE(parse_combination_label("graph+compile").has_value());
  EXPECT_FALSE(parse_combination_label("compile+torchscript").has_value());
  EXPECT_FALSE(parse_combination_label("compile_reduce_overhead+torchscript").has_value());
  EXPECT_TRUE(parse_combination_label("graph+channels_last+cudnn_benchmark+torchscript").has_value());
  EXPECT_THROW(rewrite_candidate_source("t", kConvTask, Combination{}), Error);
  EXPECT_THROW(rewrite_candidate_source("t", kConvTask, Combination{}.with(Rewrite::graph).with(Rewrite::compile_reduce_overhead)),
               Error);

  auto answers = every_answer("conv", kConvTask);
  EXPECT_EQ(answers.size(), allowed_combinations(kConvTask).size());  // 27: every allowed combination, once
  std::set<std::string> seen;
  for (auto& a : answers) {
    ASSERT_TRUE(parse_combination_label(a.label)) << a.label;
    EXPECT_EQ(a.label, combination_label(*parse_combination_label(a.label))) << "canonical order";
    EXPECT_TRUE(seen.insert(a.label).second) << "proposed twice: " << a.label;
    ParsedResponse parsed = parse_response(a.text, a.finish_reason);
    ASSERT_EQ(parsed.outcome, ResponseOutcome::ok) << a.label;
    EXPECT_EQ(parsed.code.rfind(std::string(kRewriteLabelPrefix) + a.label + "\n", 0), 0u) << parsed.code.substr(0, 80);
    EXPECT_EQ(rewrite_label_in_code(parsed.code), a.label);
  }
}

TEST(RewritePolicy, FirstRoundTriesEverySingleRewriteBeforeAnyCombination) {
  RewritePolicy policy;
  auto answers = policy.answer(request_for("conv", kConvTask, 8));
  ASSERT_EQ(answers.size(), 8u);
  std::set<std::string> singles;
  for (int i = 0; i < 6; ++i) singles.insert(answers[i].label);
  EXPECT_EQ(singles, (std::set<std::string>{"graph", "channels_last", "cudnn_benchmark", "compile", "compile_reduce_overhead",
                                            "torchscript"}));
  // With nothing measured, combinations of two come before combinations of three.
  EXPECT_EQ(parse_combination_label(answers[6].label)->size(), 2);
  EXPECT_EQ(parse_combination_label(answers[7].label)->size(), 2);
  EXPECT_EQ(policy.name(), "rewrite");
}

TEST(RewritePolicy, LearnsFromExemplarsToPreferWhatHelpedAndAvoidWhatHurt) {
  PolicyRequest request = request_for("conv", kConvTask, 20);
  // graph helped alone; channels_last hurt alone and with graph; compile helped a little.
  request.exemplars = {{"", 1.8}, {"", 1.1}, {"", 0.7}, {"", 0.9}};
  request.exemplar_labels = {"graph", "compile", "channels_last", "graph+channels_last"};
  auto answers = RewritePolicy().answer(request);
  auto labels = labels_of(answers);
  ASSERT_GE(labels.size(), 4u);
  for (auto& l : labels) {
    EXPECT_FALSE(contains(l, Rewrite::channels_last)) << l << ": channels_last never helped";
    EXPECT_TRUE(l != "graph" && l != "compile") << l << " was tried";
  }
  // The untried singles first.
  EXPECT_EQ(std::set<std::string>(labels.begin(), labels.begin() + 3),
            (std::set<std::string>{"cudnn_benchmark", "compile_reduce_overhead", "torchscript"}));
  // Then combinations: the best pair first, every one with graph before any without it.
  EXPECT_EQ(labels[3], "graph+compile");
  EXPECT_EQ(labels[4], "graph+cudnn_benchmark+compile");  // as good by the scores, one more change
  bool without_graph_seen = false;
  for (std::size_t i = 3; i < labels.size(); ++i) {
    if (!contains(labels[i], Rewrite::graph)) without_graph_seen = true;
    else EXPECT_FALSE(without_graph_seen) << labels[i] << " came after a combination without graph";
  }
  EXPECT_TRUE(without_graph_seen);
  // The answer says why.
  EXPECT_NE(answers[3].text.find("graph (1.27x)"), std::string::npos) << answers[3].text.substr(0, 1500);
  EXPECT_NE(answers[3].text.find("channels_last: 0.79x over 2 variants (never faster"), std::string::npos);
}

TEST(RewritePolicy, LabelsAreReadFromTheCodeWhenTheRequestHasNone) {
  PolicyRequest request = request_for("conv", kConvTask, 20);
  auto file = [](const char* label) { return rewrite_candidate_source("conv", kConvTask, *parse_combination_label(label)); };
  request.exemplars = {{file("graph"), 1.8}, {file("channels_last"), 0.7}, {"class ModelNew: pass  # by a model", 3.0}};
  request.exemplar_labels = {"", ""};  // shorter than exemplars: the rest are unknown too
  auto labels = labels_of(RewritePolicy().answer(request));
  ASSERT_FALSE(labels.empty());
  for (auto& l : labels) {
    EXPECT_FALSE(contains(l, Rewrite::channels_last)) << l;
    EXPECT_NE(l, "graph");
  }
}

TEST(RewritePolicy, ARewriteWhoseEveryVariantFailedIsNotProposedAgain) {
  PolicyRequest request = request_for("conv", kConvTask, 20);
  request.exemplars = {{"", 0.0}, {"", 1.3}, {"", 5.0}};  // a failure reaches the policy as speedup 0
  request.exemplar_labels = {"compile", "cudnn_benchmark", "gpt-4o"};  // the model's variant teaches nothing here
  auto labels = labels_of(RewritePolicy().answer(request));
  ASSERT_FALSE(labels.empty());
  for (auto& l : labels) EXPECT_FALSE(contains(l, Rewrite::compile)) << l;
  EXPECT_TRUE(std::find(labels.begin(), labels.end(), "compile_reduce_overhead") != labels.end())
      << "another rewrite, not the one that failed";
}

TEST(RewritePolicy, TheSameSeedGivesTheSameAnswersAndOtherSeedsBreakTiesOtherwise) {
  auto labels_for = [](uint64_t seed) { return labels_of(RewritePolicy().answer(request_for("conv", kConvTask, 19, seed))); };
  EXPECT_EQ(labels_for(7), labels_for(7));
  auto first = RewritePolicy().answer(request_for("conv", kConvTask, 2, 7));
  auto second = RewritePolicy().answer(request_for("conv", kConvTask, 2, 7));
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].text, second[i].text);
  std::set<std::vector<std::string>> orders;
  for (uint64_t seed = 0; seed < 8; ++seed) orders.insert(labels_for(seed));
  EXPECT_GT(orders.size(), 1u) << "the seed should break ties among unmeasured rewrites";
}

TEST(RewritePolicy, NoCombinationIsProposedTwiceAcrossCalls) {
  RewritePolicy policy;
  std::set<std::string> seen;
  int calls = 0;
  for (std::vector<PolicyAnswer> answers; !(answers = policy.answer(request_for("conv", kConvTask, 4, calls))).empty(); ++calls)
    for (auto& a : answers) EXPECT_TRUE(seen.insert(a.label).second) << a.label << " again in call " << calls;
  EXPECT_EQ(seen.size(), allowed_combinations(kConvTask).size());
  EXPECT_EQ(calls, 7);  // 27 = 6 × 4 + 3
  // Another task starts afresh; an exemplar counts as tried even when this object never proposed it.
  EXPECT_EQ(policy.answer(request_for("matmul", kMatmulReluTask, 100)).size(), allowed_combinations(kMatmulReluTask).size());
  PolicyRequest request = request_for("matmul2", kMatmulReluTask, 100);
  request.exemplars = {{"", 1.2}};
  request.exemplar_labels = {"compile"};
  EXPECT_EQ(policy.answer(request).size(), allowed_combinations(kMatmulReluTask).size() - 1);
  EXPECT_TRUE(policy.answer(request_for("conv", kConvTask, 0)).empty());
}

TEST(RewritePolicy, ATaskThatIsNotKernelBenchIsATaskError) {
  try {
    RewritePolicy().answer(request_for("bad", "import torch\nprint('no model here')\n", 2));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::task);
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(RewritePolicy, OddFormattingKeepsTheLabelFirstAndTheCodingDeclarationSecond) {
  std::string task = "\xEF\xBB\xBF# -*- coding: utf-8 -*-\n" + kMatmulReluTask;
  for (std::size_t at = 0; (at = task.find('\n', at)) != std::string::npos; at += 2) task.insert(at, "\r");
  auto answers = RewritePolicy().answer(request_for("crlf", task, 1));
  ASSERT_EQ(answers.size(), 1u);
  ParsedResponse parsed = parse_response(answers[0].text);
  ASSERT_EQ(parsed.outcome, ResponseOutcome::ok);
  EXPECT_EQ(parsed.code.rfind(std::string(kRewriteLabelPrefix) + answers[0].label + "\n# -*- coding: utf-8 -*-\n", 0), 0u)
      << parsed.code.substr(0, 120);
  EXPECT_EQ(parsed.code.find('\r'), std::string::npos);
  EXPECT_EQ(parsed.code.find("\xEF\xBB\xBF"), std::string::npos);
  // A reference line starting with ``` would end the code block: that answer carries an error.
  std::string fenced = kMatmulReluTask + "\nNOTE = \"\"\"\n```\n\"\"\"\n";
  auto with_fence = RewritePolicy().answer(request_for("fence", fenced, 1));
  ASSERT_EQ(with_fence.size(), 1u);
  EXPECT_FALSE(with_fence[0].error.empty());
}

TEST(RewritePolicy, EveryAnswerParsesAndItsCodeIsValidPython) {
  std::vector<std::pair<std::string, std::string>> files;
  for (auto& [task_id, source] : std::vector<std::pair<std::string, std::string>>{
           {"conv", kConvTask}, {"matmul_relu", kMatmulReluTask}, {"constant_input", kConstantInputTask}}) {
    auto answers = every_answer(task_id, source);
    EXPECT_EQ(answers.size(), allowed_combinations(source).size()) << task_id;
    for (auto& a : answers) {
      EXPECT_TRUE(a.error.empty()) << a.error;
      ParsedResponse parsed = parse_response(a.text, a.finish_reason);
      ASSERT_EQ(parsed.outcome, ResponseOutcome::ok) << task_id << " " << a.label;
      EXPECT_FALSE(parsed.analysis.empty());
      EXPECT_FALSE(parsed.design.empty());
      EXPECT_EQ(parsed.code, rewrite_candidate_source(task_id, source, *parse_combination_label(a.label)));
      EXPECT_NE(parsed.code.find(source), std::string::npos) << "the task's source, unchanged";
      files.push_back({task_id + "__" + a.label + ".py", parsed.code});
    }
  }
  fs::path dir = write_files("ast", files);
  std::string command = "python3 -c 'import ast,sys\nfor p in sys.argv[1:]: ast.parse(open(p).read(), p)'";
  for (auto& [name, text] : files) command += " '" + (dir / name).string() + "'";
  CommandResult r = run(command);
  EXPECT_EQ(r.status, 0) << r.output;
  fs::remove_all(dir);
}

namespace {

// The CPU exercises every fallback: no CUDA (graph and cuDNN idle), NHWC given up where a view
// needs NCHW, and torch.compile either real (torch 2.x) or absent (Debian's 1.13: eager).
// Returns the script's output: the state each file's fallbacks ended in.
using TaskList = std::vector<std::pair<std::string, std::string>>;

const TaskList& layout_tasks() {
  static const TaskList tasks = {{"conv", kConvTask},
                                 {"conv_view", kConvViewTask},
                                 {"conv_5d", kConvWith5dParameterTask},
                                 {"matmul_relu", kMatmulReluTask},
                                 {"constant_input", kConstantInputTask}};
  return tasks;
}

std::string expect_same_as_model(const std::string& test_name, const std::vector<std::string>& labels,
                                 const TaskList& tasks = layout_tasks()) {
  std::string python = python_with_torch();
  if (python.empty()) return "skip: no Python with torch (set CUDAL1_PYTHON)";
  std::vector<std::pair<std::string, std::string>> files;
  files.push_back({"compare.py", kCompareScript});
  for (auto& [task_id, source] : tasks)
    for (auto& label : labels)
      if (auto c = parse_combination_label(label); c && applicable_rewrites(source).contains_all(*c))
        files.push_back({task_id + "__" + label + ".py", rewrite_candidate_source(task_id, source, *c)});
  fs::path dir = write_files(test_name, files);
  // torch.compile on the CPU builds C++ with the host compiler: a slow machine may not finish.
  const int limit_s = 120;
  std::string command = "timeout " + std::to_string(limit_s) + " '" + python + "' '" + (dir / "compare.py").string() + "'";
  for (std::size_t i = 1; i < files.size(); ++i) command += " '" + (dir / files[i].first).string() + "'";
  auto start = std::chrono::steady_clock::now();
  CommandResult r = run(command);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fs::remove_all(dir);
  if (r.status == 124) return "skip: over " + std::to_string(limit_s) + " s (torch.compile on this CPU is too slow to check here)";
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("MISMATCH"), std::string::npos) << r.output;
  std::cout << "[ compared " << files.size() - 1 << " files in " << seconds << " s with " << python << " ]\n" << r.output;
  return r.output;
}

}  // namespace

TEST(RewritePolicy, OnTheCpuModelNewMatchesModelWithLayoutAndGraphRewrites) {
  std::string out = expect_same_as_model("layout", {"graph", "channels_last", "cudnn_benchmark", "graph+channels_last+cudnn_benchmark"});
  if (out.rfind("skip: ", 0) == 0) GTEST_SKIP() << out.substr(6);
  // NHWC kept where the model takes it, given up where a view needs NCHW.
  EXPECT_NE(out.find("checked conv__channels_last.py {'nhwc': True}"), std::string::npos) << out;
  EXPECT_NE(out.find("checked conv_view__channels_last.py {'nhwc': False}"), std::string::npos) << out;
  EXPECT_NE(out.find("checked conv_5d__channels_last.py {'nhwc': False}"), std::string::npos) << out;
  EXPECT_NE(out.find("checked conv__graph+channels_last+cudnn_benchmark.py {'nhwc': True}"), std::string::npos) << out;
}

TEST(RewritePolicy, OnTheCpuModelNewMatchesModelWithCompileRewrites) {
  std::string out = expect_same_as_model(
      "compile", {"compile", "compile_reduce_overhead", "channels_last+compile", "graph+channels_last+cudnn_benchmark+compile"});
  if (out.rfind("skip: ", 0) == 0) GTEST_SKIP() << out.substr(6);
  // Where torch has torch.compile, the compiled model served every call (no fallback taken).
  if (out.find("torch.compile: yes") != std::string::npos) {
    EXPECT_NE(out.find("checked conv__compile.py {'compiled': True, 'compile_error': ''}"), std::string::npos) << out;
    EXPECT_NE(out.find("checked matmul_relu__compile.py {'compiled': True, 'compile_error': ''}"), std::string::npos) << out;
  } else {
    EXPECT_NE(out.find("checked conv__compile.py {'compiled': False, 'compile_error': ''}"), std::string::npos) << out;
  }
}

TEST(RewritePolicy, OnTheCpuModelNewMatchesModelWithAFrozenTraceWhereOneCanBeTrusted) {
  TaskList tasks = layout_tasks();
  tasks.push_back({"merged_weight", kMergedWeightTask});
  tasks.push_back({"value_branch", kValueBranchTask});
  std::string out = expect_same_as_model("torchscript", {"torchscript", "channels_last+torchscript", "graph+torchscript"}, tasks);
  if (out.rfind("skip: ", 0) == 0) GTEST_SKIP() << out.substr(6);
  // The weight merged once, in the trace: no matrix product of parameters is left per call.
  EXPECT_NE(out.find("checked merged_weight__torchscript.py {'frozen': [True], 'matmul_left': False, 'grad_kept': True}"),
            std::string::npos) << out;
  EXPECT_NE(out.find("checked matmul_relu__torchscript.py {'frozen': [True], 'matmul_left': True, 'grad_kept': True}"),
            std::string::npos) << out;
  // Eager where a trace could be wrong: batch statistics in training mode, a branch on a value;
  // and where an argument is not a tensor (nothing traced).
  EXPECT_NE(out.find("checked conv__torchscript.py {'frozen': [False], 'matmul_left': False, 'grad_kept': True}"),
            std::string::npos) << out;
  EXPECT_NE(out.find("checked value_branch__torchscript.py {'frozen': [False], 'matmul_left': False, 'grad_kept': True}"),
            std::string::npos) << out;
  EXPECT_NE(out.find("checked constant_input__torchscript.py {'frozen': [], 'matmul_left': False, 'grad_kept': True}"),
            std::string::npos) << out;
}

TEST(RewritePolicy, OnTheCpuOnlyRewritesThatCanWorkThereAreProposed) {
  auto on = [](const std::string& device) {
    PolicyRequest request = request_for("conv", kConvTask, 100);
    request.device = device;
    std::set<std::string> labels;
    for (auto& l : labels_of(RewritePolicy().answer(request))) labels.insert(l);
    return labels;
  };
  EXPECT_EQ(on("cpu"), (std::set<std::string>{"channels_last", "compile", "torchscript", "channels_last+compile",
                                              "channels_last+torchscript"}));
  EXPECT_EQ(on("cuda:1").size(), allowed_combinations(kConvTask).size());
  EXPECT_EQ(on("").size(), allowed_combinations(kConvTask).size());
}

// optimize --turns: a revision request carries the slot's earlier answers with their verdicts. A
// failed answer's rewrite is evidence against it, so the revision is the next combination in the
// policy's order that holds none of the failed rewrites, not the failed one again.
TEST(RewritePolicy, AfterAFailedTurnTheRevisionIsTheNextCombinationWithoutIt) {
  PolicyRequest request = request_for("conv", kConvTask, 1);
  request.history = {{"## Code Implementation ...", "compile", "Status: runtime_error (not accepted)", false, std::nullopt}};
  RewritePolicy policy;
  auto revised = labels_of(policy.answer(request));
  ASSERT_EQ(revised.size(), 1u);
  EXPECT_FALSE(contains(revised[0], Rewrite::compile)) << revised[0] << ": compile just failed";
  // Without the history, this fresh policy's first choice for the same seed is another single rewrite.
  PolicyRequest fresh = request_for("conv", kConvTask, 6);
  auto singles = labels_of(RewritePolicy().answer(fresh));
  EXPECT_TRUE(std::find(singles.begin(), singles.end(), revised[0]) != singles.end()) << revised[0];
  // A second failure blocks that one too: the third turn holds neither.
  request.history.push_back({"...", revised[0], "Status: incorrect (not accepted)", false, std::nullopt});
  auto third = labels_of(policy.answer(request));
  ASSERT_EQ(third.size(), 1u);
  EXPECT_FALSE(contains(third[0], Rewrite::compile)) << third[0];
  EXPECT_FALSE(parse_combination_label(third[0])->contains_all(*parse_combination_label(revised[0]))) << third[0];
}

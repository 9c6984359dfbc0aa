#include "evaluator/evaluator.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>

#include <unistd.h>

#include "baselines/baselines.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/keyed_mutex.h"
#include "core/owned_dir.h"
#include "core/paths.h"
#include "evaluator/call_budget.h"
#include "evaluator/infrastructure.h"
#include "evaluator/measure.h"
#include "evaluator/oracle.h"
#include "evaluator/prebuilt.h"
#include "evaluator/precision.h"
#include "evaluator/shadowing.h"
#include "lint/lint.h"
#include "evaluator/verdicts.h"
#include "runner/python.h"
#include "runner/worker.h"

namespace fs = std::filesystem;
using namespace std::chrono;

namespace cudal1 {

namespace {

constexpr const char* kDistributions[] = {"normal", "scaled_offset", "heavy_tailed"};
constexpr int kInits = 2;

milliseconds seconds_to_ms(double s) { return milliseconds(static_cast<long long>(s * 1000)); }

// The evaluation's private directory: removed however the evaluation ends, and by a later
// process when this one is killed (core/owned_dir.h).
struct ScratchDir {
  OwnedDir dir{"cudal1-eval", scratch_parent()};
  fs::path root = dir.path();
};

struct Plan {
  uint64_t base_seed;
  json inits = json::array(), cases = json::array();
};

Plan make_plan(std::optional<uint64_t> seed) {
  Plan p;
  p.base_seed = seed ? *seed : (uint64_t(std::random_device{}()) << 20) ^ std::random_device{}();
  p.base_seed &= (uint64_t(1) << 52) - 1;  // stays exact through JSON doubles and torch seeds
  for (int j = 0; j < kInits; ++j) p.inits.push_back({{"seed", p.base_seed + 1 + j}});
  for (int j = 0, k = 0; j < kInits; ++j)
    for (const char* dist : kDistributions)
      p.cases.push_back({{"init", j}, {"dist", dist}, {"seed", p.base_seed + 100 + k++}});
  return p;
}

// Host memory an evaluation holds besides its tensors: the two workers with torch (and, on
// CUDA, its context); a task not measured yet is first assumed this large.
uint64_t worker_bytes(const std::string& device) { return is_cuda_device(device) ? uint64_t(2) << 30 : uint64_t(512) << 20; }
constexpr uint64_t kFirstFootprintGuess = uint64_t(1) << 30;

// What a task's tensors take while it is evaluated: its inputs (files in the shared folder), every
// case's expected outputs (held here), and one case's outputs about four times over (the
// candidate's file, its copy here, case 0's kept for the precision ladder, the oracle's).
uint64_t evaluation_footprint(const fs::path& inputs_dir, const std::vector<std::vector<TensorValue>>& expected) {
  uint64_t inputs = 0, all = 0, largest = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(inputs_dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) inputs += it->file_size(ec);
  for (auto& case_outputs : expected) {
    uint64_t bytes = 0;
    for (auto& v : case_outputs) bytes += v.bytes.size();
    all += bytes, largest = std::max(largest, bytes);
  }
  return inputs + all + 4 * largest;
}

// The precision ladder on case 0 of a float32 task (precision.h): a candidate that fails it gets
// its status (incorrect for a systematic error, rejected for reduced precision) and error. The
// oracle's outputs go to a folder hidden from the candidate's process and are deleted once read.
void check_precision(Worker& ref, const EvalOptions& o, double call_timeout_s, const fs::path& oracle_dir,
                     const std::vector<TensorValue>& expected, const std::vector<TensorValue>& actual,
                     EvalResult& r) {
  bool float32 = false;
  for (auto& e : expected) {
    if (!e.is_tensor || !dtype_is_float(e.dtype)) continue;
    if (e.dtype != DType::f32) return;  // half-precision tasks have no lower rung worth telling apart
    float32 = true;
  }
  if (!float32 || actual.size() != expected.size()) return;
  fs::path file = oracle_dir / "oracle_0.ctf";
  json rep = reference_call(ref, {{"op", "precision_ladder"}, {"case", 0}, {"oracle_file", file.string()}},
                            seconds_to_ms(call_timeout_s) * 6, o.task_path).body;
  if (rep.contains("skipped")) {
    r.correctness["precision"] = {{"skipped", rep["skipped"]}};
    return;
  }
  std::vector<TensorValue> oracle = read_tensor_file(file);
  fs::remove(file);
  std::vector<std::optional<double>> errors;
  std::vector<std::optional<ErrorShape>> shapes;
  for (std::size_t i = 0; i < actual.size() && i < oracle.size(); ++i) {
    errors.push_back(relative_error(actual[i], oracle[i]));
    shapes.push_back(error_shape(actual[i], oracle[i]));
  }
  PrecisionVerdict v = judge_precision(rep["rungs"], errors, shapes);
  r.correctness["precision"] = {{"verdict", v.systematic ? "systematic" : v.reduced ? "reduced" : "as_reference"},
                                {"like", v.like}, {"rungs", rep["rungs"]}, {"outputs", v.detail}};
  if (rep.contains("on_host")) r.correctness["precision"]["on_host"] = rep["on_host"];  // the device was full
  // A bias or a wrong constant is another function, not a cheaper way to compute this one: it is
  // incorrect, and no option accepts it.
  if (v.systematic) {
    r.add_flag("systematic_error", Severity::block, v.evidence);
    r.status = Status::incorrect;
    r.error = "case 0: within the tolerance, but the error is systematic, not rounding: " + v.evidence;
    return;
  }
  if (!v.reduced) return;
  r.add_flag("reduced_precision", o.allow_reduced_precision ? Severity::warn : Severity::block,
             v.evidence + (o.allow_reduced_precision ? " (accepted: --allow-reduced-precision)" : ""));
  if (o.allow_reduced_precision) return;
  r.status = Status::rejected;
  // The option is offered only where the evidence is rounding: a hint must never lead a person
  // to accept what may be wrong.
  r.error = "reduced precision in a float32 task: " + v.evidence +
            (v.rounding_like ? " (pass --allow-reduced-precision to accept it, labelled)"
                             : " (not offered for acceptance: nothing shows the error is only rounding)");
}

// A case that failed the tolerance against the reference, judged against the float64 oracle
// instead (oracle.h): it passes when the candidate is at least as close to the exact result as
// the reference is. The oracle's outputs, like the ladder's, never reach the candidate's folder.
bool passes_against_oracle(Worker& ref, const EvalOptions& o, double call_timeout_s, const fs::path& oracle_dir, std::size_t k,
                           const std::vector<TensorValue>& expected, const std::vector<TensorValue>& actual, json& verdict) {
  fs::path file = oracle_dir / ("oracle_case_" + std::to_string(k) + ".ctf");
  json rep = reference_call(ref, {{"op", "oracle"}, {"case", k}, {"oracle_file", file.string()}},
                            seconds_to_ms(call_timeout_s) * 6, o.task_path).body;
  if (rep.contains("skipped")) {
    verdict["oracle"] = {{"skipped", rep["skipped"]}};
    return false;
  }
  std::vector<TensorValue> oracle = read_tensor_file(file);
  fs::remove(file);
  OracleJudgement j = judge_against_oracle(expected, actual, oracle, o.tolerance);
  verdict["oracle"] = {{"passed", j.passed}, {"outputs", j.outputs}};
  if (!j.passed) verdict["oracle"]["problem"] = j.problem;
  return j.passed;
}

}  // namespace

std::string EvalOptions::protocol_key() const {
  // Everything that changes what a figure means: a quick 3-bucket run or a fixed seed is not
  // the default protocol and must not answer for it.
  std::string key = std::string(kProtocolVersion) + ";tol=" + tolerance_mode_name(tolerance) +
                    ";timing=" + (timing ? "on" : "off");
  if (buckets > 0) key += ";buckets=" + std::to_string(buckets);
  if (calls_per_bucket > 0) key += ";calls=" + std::to_string(calls_per_bucket);
  if (seed) key += ";seed=" + std::to_string(*seed);
  if (allow_reduced_precision) key += ";precision=reduced-allowed";
  return key;
}

// Everything an evaluation holds between its CPU part and its GPU part. Heap-allocated and
// never moved: the session refers to `o`.
struct PreparedEvaluation {
  explicit PreparedEvaluation(const EvalOptions& options) : o(options) {}
  EvalOptions o;
  // Read first, before any process starts: an out-of-memory kill from here on counts against
  // this evaluation (evaluator/infrastructure.h).
  std::optional<uint64_t> oom_kills_at_start = oom_kill_count();
  EvalResult r;
  std::string task_src, cand_src, python;
  MemoryBudget::Hold memory;  // declared before scratch: released after its files are gone
  ScratchDir scratch;
  fs::path shared, secret, ref_dir, cand_dir, oracle_dir;
  Plan plan;
  WorkerSpec cspec;
  // With a freezing gate: this evaluation's processes, which another lane's timing may stop.
  // Declared before the workers, which leave it when they go.
  std::unique_ptr<DeviceGate::Member> member;
  std::unique_ptr<Worker> ref, cand;
  json prebuilt = nullptr;  // load_candidate's "prebuilt" entries (evaluator/prebuilt.h)
  double prepare_seconds = 0;
};

void PreparedDeleter::operator()(PreparedEvaluation* p) const { delete p; }

namespace {

// A blocking flag's evidence for the error line (a warning may have been added after it).
std::string first_blocking_evidence(const EvalResult& r) {
  for (auto& f : r.flags)
    if (f.severity == Severity::block) return f.evidence;
  return r.flags.empty() ? std::string() : r.flags.back().evidence;
}

// What candidate and reference code alike must not see: the folders of the protected files
// (the store: its journal and key files appear beside it) whole, and the hidden paths.
std::vector<std::string> hidden_from_sandboxes(const EvalOptions& o) {
  std::vector<std::string> hidden;
  for (auto& f : o.protect_files) hidden.push_back(fs::absolute(f).parent_path().string());
  for (auto& d : o.hidden_paths) hidden.push_back(d);
  return hidden;
}

// This machine's name: a sandboxed worker sees only its sandbox's (its own UTS namespace).
std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

// Speedups against the task's baselines: the eager figure times each baseline's cached ratio.
// before_timing: called once they are built and checked, before they are timed.
void add_baselines(const EvalOptions& o, const std::string& python, const json& env, EvalResult& r,
                   std::function<void()> before_timing) {
  try {
    BaselineOptions bo;
    bo.task_path = o.task_path, bo.device = o.device, bo.python = python, bo.store = o.cache_store, bo.env = env;
    bo.names = o.baseline_names;
    bo.buckets = o.buckets, bo.calls = o.calls_per_bucket, bo.warmup = o.warmup;  // timed as the candidate was
    bo.hidden = hidden_from_sandboxes(o);
    bo.before_timing = std::move(before_timing);
    BaselineSet b = measure_baselines(bo);
    r.statistics["baselines"] = b.to_json();
    double eager = r.speedup.at("eager");
    for (auto& f : b.figures)
      if (f.ratio) r.speedup[f.name] = std::round(eager * *f.ratio * 100.0) / 100.0;
  } catch (const Error& e) {
    r.statistics["baselines"] = {{"error", e.message()}};  // the eager verdict stands without them
  }
}

// The candidate's extensions from the build service, when one is in use: already built by the
// caller, or built now (CPU work, before the GPU is asked for anything).
void stage_builds(PreparedEvaluation& p) {
  const EvalOptions& o = p.o;
  std::shared_ptr<const BuildOutcome> outcome = o.prebuilt;
  if (!outcome && o.build_service) {
    try {
      outcome = std::make_shared<BuildOutcome>(o.build_service->build_candidate(p.r.candidate_path, o.device, o.build_timeout_s, o.task_path));
    } catch (const Error& e) {
      // The service could not run (no Python, a full disk): the candidate builds its own.
      p.r.build = {{"error", e.message()}, {"fallback", "the candidate's process built its extensions"}};
    }
  }
  if (!outcome) return;
  p.r.build = outcome->to_json();
  p.prebuilt = stage_prebuilt(*outcome, p.cand_dir);
}

}  // namespace

// What the candidate's sandbox lets it read beside its own folder: its source and the inputs
// the reference wrote.
SandboxPolicy candidate_sandbox(const EvalOptions& o, const std::string& candidate_path, const fs::path& inputs) {
  return SandboxPolicy{.readable = {candidate_path, inputs.string()}, .hidden = hidden_from_sandboxes(o)};
}

PreparedPtr prepare_evaluation(const EvalOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PreparedPtr p(new PreparedEvaluation(options));
  const EvalOptions& o = p->o;
  EvalResult& r = p->r;
  r.task_path = fs::absolute(o.task_path).string();
  r.candidate_path = fs::absolute(o.candidate_path).string();
  p->task_src = read_file(o.task_path);
  p->cand_src = read_file(o.candidate_path);
  r.task_hash = sha256_hex(p->task_src);
  r.candidate_hash = sha256_hex(p->cand_src);
  p->python = find_python(o.python);
  fs::path root = p->scratch.root;
  p->shared = root / "inputs", p->secret = root / "expected", p->ref_dir = root / "reference",
  p->cand_dir = root / "candidate", p->oracle_dir = root / "oracle";
  for (auto& d : {p->shared, p->secret, p->ref_dir, p->cand_dir, p->oracle_dir}) fs::create_directories(d);
  p->plan = make_plan(o.seed);

  // The trusted reference and the untrusted candidate start now and import torch while the
  // caller does other work; neither touches the GPU before run_evaluation asks it to.
  WorkerSpec rs{WorkerRole::reference, p->python, p->ref_dir.string(), o.device, {}, {}};
  rs.limits.output_bytes = std::size_t(64) << 20;
  // Trusted to define the answers, not to touch anything else: a task may be a client's. It
  // writes the inputs, the expected outputs and the oracle, and reads its own file.
  rs.sandbox = SandboxPolicy{.writable = {p->shared.string(), p->secret.string(), p->oracle_dir.string()},
                             .readable = {r.task_path}, .hidden = hidden_from_sandboxes(o)};
  p->ref = std::make_unique<Worker>(rs);

  WorkerSpec& cspec = p->cspec;
  cspec = {WorkerRole::candidate, p->python, p->cand_dir.string(), o.device, {}, {}};
  cspec.limits.output_bytes = o.output_limit_kb << 10;
  cspec.limits.memory_bytes = o.memory_limit_mb << 20;
  cspec.limits.limit_address_space = !is_cuda_device(o.device);  // CUDA reserves far more address space than it uses
  cspec.limits.drop_privileges = true;
  fs::create_directories(p->cand_dir / ".stage");
  if (o.reuse_extension_builds) {
    // load_inline builds are kept per candidate content, so re-evaluating the same candidate does
    // not rebuild (its build folder keeps one path, which ninja needs to see it as up to date).
    // The candidate sees only that folder of the cache; the rest, and the store, are hidden.
    fs::path ext_root = extension_cache_dir();
    std::string own = r.candidate_hash.substr(0, 24);
    fs::create_directories(ext_root / own);
    cspec.extensions_dir = (ext_root / own).string();
    cspec.limits.hide_dirs = {{ext_root.string(), own, (p->cand_dir / ".stage").string()}};
  }  // else: a fresh folder inside the candidate's workdir, the stock way (one build per candidate)
  cspec.limits.hide_dirs.push_back({p->oracle_dir.string(), "", ""});
  for (auto& f : o.protect_files)
    if (fs::exists(f)) cspec.limits.hide_files.push_back(fs::absolute(f).string());
  cspec.sandbox = candidate_sandbox(o, r.candidate_path, p->shared);
  stage_builds(*p);
  p->cand = std::make_unique<Worker>(cspec);
  p->prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

EvalResult evaluate(const EvalOptions& options) {
  PreparedPtr p = prepare_evaluation(options);
  return run_evaluation(*p);
}

// One attempt at the evaluation; run_evaluation below runs it again when the machine killed the candidate.
static EvalResult run_once(PreparedEvaluation& p) {
  const EvalOptions& o = p.o;
  EvalResult& r = p.r;
  const std::string &task_src = p.task_src, &cand_src = p.cand_src, &python = p.python;
  const fs::path &shared = p.shared, &secret = p.secret, &cand_dir = p.cand_dir, &oracle_dir = p.oracle_dir;
  const Plan& plan = p.plan;
  WorkerSpec& cspec = p.cspec;
  r.phase_seconds["prepare"] = p.prepare_seconds;
  // Each stage runs until the next is reported; its wall time goes into phase_seconds.
  // Time spent waiting for a device shared with other evaluations goes into "device_wait".
  std::string stage_now;
  auto stage_start = std::chrono::steady_clock::now();
  DeviceGate::Hold device_hold;
  auto add_seconds = [&](const std::string& phase, auto from, auto to) {
    r.phase_seconds[phase] = r.phase_seconds.value(phase, 0.0) + std::chrono::duration<double>(to - from).count();
  };
  std::optional<DeviceGate::Member::Scope> joined;  // workers started from here on join too
  if (o.device_gate && o.device_gate->freezes()) {
    p.member = std::make_unique<DeviceGate::Member>(o.device_gate.get());
    p.ref->join(p.member.get());
    p.cand->join(p.member.get());
    joined.emplace(p.member.get());
  }
  std::chrono::nanoseconds frozen_before{0};  // the member's frozen time when the stage began
  // The stage running now ends at `now`: its time goes into its phase, except the time another
  // lane's timing kept its processes stopped, which is a phase of its own.
  auto close_stage = [&](std::chrono::steady_clock::time_point now) {
    if (stage_now.empty()) return;
    auto frozen = p.member ? p.member->frozen_for() : std::chrono::nanoseconds(0);
    add_seconds(stage_now, stage_start + (frozen - frozen_before), now);
    if (frozen > frozen_before) add_seconds("frozen", now - (frozen - frozen_before), now);
    frozen_before = frozen;
  };
  auto report = [&](const std::string& stage, double f) {
    auto now = std::chrono::steady_clock::now();
    close_stage(now);
    // The idle check measures what the candidate's threads do while time passes: stopping its
    // process meanwhile would hide them. Set while the timing's exclusive hold is still held.
    if (p.member && stage == "idle check") p.member->set_freezable(false);
    else if (p.member && stage_now == "idle check" && stage != "done") p.member->set_freezable(true);
    if (o.device_gate) {
      // Attribution compares kernels' shares of the candidate's own GPU time, which another
      // process's work does not shift much; speed figures need the device alone.
      bool alone = stage == "timing" || stage == "re-timing" || stage == "baseline timing";
      auto mode = alone ? DeviceGate::Mode::exclusive : DeviceGate::Mode::shared;
      if (stage == "done") device_hold.release();
      else if (device_hold.held() && device_hold.mode() == mode && mode == DeviceGate::Mode::shared) {
        // Between two shared stages: an evaluation waiting to time goes first, so it waits for
        // the stages running now, not for whole evaluations.
        if (device_hold.yield()) {
          auto after = std::chrono::steady_clock::now();
          add_seconds("device_wait", now, after);
          now = after;
        }
      }
      else if (device_hold.held() && device_hold.mode() == DeviceGate::Mode::exclusive && mode == DeviceGate::Mode::shared)
        device_hold.downgrade();
      else if (!device_hold.held() || device_hold.mode() != mode) {
        device_hold.release();
        device_hold = o.device_gate->acquire(mode, p.member.get());
        auto after = std::chrono::steady_clock::now();
        add_seconds("device_wait", now, after);
        now = after;
      }
    }
    stage_now = stage;
    stage_start = now;
    if (o.progress) o.progress(stage, f);
  };

  // A task's cached facts (its lint, its baselines) are computed by one lane at a time: a lane
  // that finds another computing them waits holding nothing of the device (the other may need
  // it alone), then reads the answer from the store instead of computing it again.
  auto one_lane_per_task = [&](const std::string& what) {
    static KeyedMutex flights;
    std::string key = what + "|" + r.task_hash + "|" + o.device + "|" + o.protocol_key();
    if (!o.cache_store) return KeyedMutex::Guard();
    KeyedMutex::Guard g = flights.try_lock(key);
    if (g.held()) return g;
    auto now = std::chrono::steady_clock::now();
    close_stage(now);
    device_hold.release();
    g = flights.lock(key);
    stage_start = std::chrono::steady_clock::now();
    add_seconds("same_task_wait", now, stage_start);
    return g;
  };

  // Host memory before anything of the device is held: an evaluation waiting here must not keep
  // another from the exclusive hold it needs to finish and free its memory.
  if (o.memory_budget) {
    auto t0 = std::chrono::steady_clock::now();
    p.memory = o.memory_budget->reserve(worker_bytes(o.device) + o.memory_budget->estimate(r.task_hash, kFirstFootprintGuess));
    add_seconds("memory_wait", t0, std::chrono::steady_clock::now());
  }

  // 0. The task's own lint: a speedup on a task a null kernel passes is labelled as such.
  if (o.lint) {
    KeyedMutex::Guard one_lane = one_lane_per_task("lint");
    report("lint", 0.0);
    try {
      LintResult lint = lint_task_cached(o.task_path, o.device, o.tolerance, o.cache_store, python, hidden_from_sandboxes(o));
      r.task_lint = lint.to_json();
      for (auto& f : lint.findings)
        r.add_flag("degenerate_task", Severity::warn, "the task is degenerate (" + f.id + "): " + f.evidence);
      if (lint.fixed_weights)
        r.add_flag("weights_fixed", Severity::warn, kFixedWeightsWarning);
    } catch (const Error& e) {
      r.task_lint = {{"error", e.message()}};  // the evaluation below reports a broken task itself
    }
  }
  std::mt19937_64 rng(plan.base_seed ^ 0x9e3779b97f4a7c15ull);

  // 1. The trusted reference: inputs, weights and expected outputs.
  report("reference", 0.0);
  Worker& ref = *p.ref;
  json loaded = reference_call(
      ref, {{"op", "load_task"}, {"task", r.task_path}, {"workdir", shared.string()},
            {"private", secret.string()}, {"inits", plan.inits}, {"cases", plan.cases}},
      seconds_to_ms(o.build_timeout_s), o.task_path).body;
  std::vector<std::vector<TensorValue>> expected;
  for (auto& c : loaded["cases"]) {
    fs::path f = c["expected"].get<std::string>();
    expected.push_back(read_tensor_file(f));
    fs::remove(f);  // gone from disk before any candidate code runs
  }
  fs::remove_all(secret);
  if (o.memory_budget) {
    uint64_t footprint = evaluation_footprint(shared, expected);
    o.memory_budget->remember(r.task_hash, footprint);
    p.memory.resize(worker_bytes(o.device) + footprint);
  }
  const CallTimeouts timeouts = fit_call_timeouts(o.call_timeout_s, reference_call_ms(loaded["cases"]));
  r.budgets = timeouts.to_json(o.build_timeout_s);
  const json& env = loaded["env"];
  r.provenance = {{"protocol", kProtocolVersion}, {"protocol_key", o.protocol_key()},
                  {"device", o.device}, {"device_name", env.value("device_name", "")},
                  {"driver", env.value("driver", json(nullptr))}, {"torch", env.value("torch", "")},
                  {"cuda", env.value("cuda", json(nullptr))}, {"python", env.value("python", "")},
                  {"host", host_name()}, {"cudal1", CUDAL1_VERSION},
                  {"tolerance", tolerance_mode_name(o.tolerance)}, {"seed", plan.base_seed},
                  {"cases", plan.cases}, {"sandbox", sandbox_support().describe()}};

  // 2. The untrusted candidate, in its own unprivileged process (started by prepare_evaluation).
  report("candidate", 0.1);
  std::unique_ptr<Worker>& cand_ptr = p.cand;
  auto finish = [&](EvalResult& res) -> EvalResult {
    cand_ptr->shutdown();
    ref.shutdown();
    res.accepted = res.status == Status::ok && !res.has_blocking_flag();
    report("done", 1.0);
    return res;
  };

  json case_meta = json::array();
  for (auto& c : loaded["cases"]) case_meta.push_back({{"file", c["file"]}, {"init", c["init"]}, {"outputs", c["outputs"]}});
  json init_meta = json::array();
  for (auto& i : loaded["inits"]) init_meta.push_back({{"file", i["file"]}});
  json load_request = {{"op", "load_candidate"}, {"candidate", r.candidate_path},
                       {"inits", init_meta}, {"cases", case_meta}, {"ctor", loaded["ctor"]}};
  if (!p.prebuilt.is_null()) load_request["prebuilt"] = p.prebuilt;
  WorkerReply lr = cand_ptr->request(load_request, seconds_to_ms(o.build_timeout_s));
  // Which load_inline calls the prebuilt modules answered, as the candidate's process tells it:
  // for a person reading the result (a "missed" call compiled in that process), never a verdict.
  if (lr.kind == WorkerReply::Kind::ok && lr.body.contains("prebuilt")) r.build["calls_reported"] = lr.body["prebuilt"];
  if (apply_candidate_failure(lr, "loading the candidate", cand_ptr->stderr_tail(), r)) return finish(r);
  apply_guard_evidence(lr.body, false, r);
  for (auto& name : shadowed_task_names(task_src, cand_src))
    r.add_flag("task_constants_shadowed", Severity::warn,
               "the candidate redefines the task's " + name + "; inputs still come from the task");
  Worker& cand = *cand_ptr;
  Session session{o, ref, o.task_path, int(expected.size()), std::mt19937_64(rng()), {}};
  session.candidate = cand_ptr.get();
  session.call_timeout_s = timeouts.call_s;
  // The idle check after the timed buckets needs no device: another lane may time meanwhile.
  session.timing_done = [&] { report("idle check", 0.8); };

  // 3. Correctness on every case; exact checks first, then values.
  bool all_passed = true, exact_failed = false;
  json per_case = json::array();
  std::vector<TensorValue> first_actual;  // case 0's outputs, for the precision ladder
  for (std::size_t k = 0; k < expected.size(); ++k) {
    report("checking", 0.2 + 0.3 * double(k) / double(expected.size()));
    // The same call path as timed calls (measure.h); this one also writes its whole outputs.
    json req = {{"op", "calls"}, {"calls", {{{"case", k}, {"variant", nullptr}, {"slot", k}}}},
                {"samples", o.sample_elements}, {"write", true}, {"out_dir", cand_dir.string()}, {"tag", k}};
    // The first call may compile (evaluator/call_budget.h); the others get their call timeout.
    WorkerReply rr = k == 0 ? first_call(cand, req, {timeouts.per_case_s[0], o.build_timeout_s}, r.budgets["first_call_extended_for"])
                            : cand.request(req, seconds_to_ms(timeouts.per_case_s[k]));
    std::string what = "case " + std::to_string(k) + " (" + plan.cases[k]["dist"].get<std::string>() + " inputs)";
    if (apply_candidate_failure(rr, what, cand.stderr_tail(), r)) return finish(r);
    apply_guard_evidence(rr.body, false, r);
    json rec = rr.body.contains("calls") && rr.body["calls"].is_array() && rr.body["calls"].size() == 1
                   ? rr.body["calls"][0] : json::object();
    std::size_t flags_before = r.flags.size();
    if (apply_exact_checks(rec, int(k), r) && !exact_failed) {
      exact_failed = true;
      r.error = what + ": failed an exact check: " + r.flags[flags_before].evidence;
    }
    std::vector<TensorValue> actual;
    try {
      fs::path out = fs::weakly_canonical(rec.value("out_file", ""));
      if (out.parent_path() != fs::weakly_canonical(cand_dir)) throw Error(ErrorKind::runner, "output file outside the candidate's directory");
      std::size_t limit = 1 << 20;
      for (auto& e : expected[k]) limit += e.bytes.size() + 4096;
      actual = read_tensor_file(out, limit);
      fs::remove(out);
    } catch (const Error& e) {
      r.status = Status::rejected;
      r.add_flag("fake_worker_output", Severity::block, what + ": " + e.message());
      r.error = what + ": the candidate's outputs could not be read back";
      return finish(r);
    }
    bool passed = false;
    json verdict = check_case_values(expected[k], actual, o.tolerance, int(k), passed, r);
    if (!passed && r.flags.size() == flags_before && passes_against_oracle(ref, o, session.call_timeout_s, oracle_dir, k, expected[k], actual, verdict)) {
      passed = true, verdict["passed"] = true, verdict["judged_against"] = "oracle";
      if (!session.reference_imprecise)
        r.add_flag("reference_imprecise", Severity::info,
                   what + ": outside the tolerance of the reference's outputs, but closer to the float64 oracle than they "
                   "are; every case and timed call that disagrees with the reference is judged against the oracle");
      session.reference_imprecise = true;
    }
    verdict["case"] = k;
    verdict["dist"] = plan.cases[k]["dist"];
    verdict["init"] = plan.cases[k]["init"];
    per_case.push_back(verdict);
    if (k == 0) first_actual = std::move(actual);
    if (!passed && all_passed && !exact_failed) {
      all_passed = false;
      std::string detail;
      for (auto& out : verdict.value("outputs", json::array()))
        if (!out.value("passed", false)) {
          detail = "output " + std::to_string(out.value("index", 0)) + ": " +
                   out.value("problem", out.value("summary", std::string()));
          break;
        }
      if (detail.empty()) detail = verdict.value("problem", "");
      r.error = what + ": " + detail;
    }
  }
  r.correctness = {{"cases", per_case}, {"passed", all_passed},
                   {"tolerance", tolerance_mode_name(o.tolerance)}};
  // A failed exact check is a rejection whatever the values; wrong values alone are incorrect.
  if (exact_failed) {
    r.status = Status::rejected;
    return finish(r);
  }
  if (!all_passed) {
    r.status = Status::incorrect;
    return finish(r);
  }
  // What the guard saw while the cases ran (introspection, tampering) rejects before precision
  // and speed are looked at, under its own evidence.
  if (r.has_blocking_flag()) {
    r.status = Status::rejected;
    r.error = first_blocking_evidence(r);
    return finish(r);
  }

  // 4. Precision: a float32 task must not be computed in reduced precision.
  if (o.precision_check) {
    report("precision", 0.45);
    {
      OthersStopped stopped(session);
      check_precision(ref, o, session.call_timeout_s, oracle_dir, expected[0], first_actual, r);
    }
    if (r.status != Status::ok) return finish(r);
  }

  // 5. Speed, paired against the reference.
  if (o.timing) {
    report("timing", 0.5);
    if (!measure(session, cand, r)) return finish(r);
    // A large gain is measured again with a fresh candidate process before it counts, so a
    // process that learned something during the first measurement gains nothing from it; the
    // lower of the two figures stands.
    double first = r.speedup["eager"];
    double bar = o.fresh_remeasure_above;
    if (o.best_known_speedup && *o.best_known_speedup > 0)
      bar = std::min(bar, o.best_known_factor * *o.best_known_speedup);
    if (bar > 0 && first > bar && !r.has_blocking_flag()) {
      report("re-timing", 0.8);
      json first_stats = r.statistics;
      auto first_runtime = r.runtime_ms;
      cand_ptr->shutdown();
      cand_ptr = std::make_unique<Worker>(cspec);
      session.candidate = cand_ptr.get();
      WorkerReply again = cand_ptr->request(load_request, seconds_to_ms(o.build_timeout_s));
      if (apply_candidate_failure(again, "reloading the candidate in a fresh process", cand_ptr->stderr_tail(), r))
        return finish(r);
      if (!measure(session, *cand_ptr, r)) return finish(r);
      double second = r.speedup["eager"];
      if (first < second) {
        r.speedup["eager"] = first;
        r.runtime_ms = first_runtime;
        std::swap(r.statistics, first_stats);
      }
      r.statistics["fresh_process_remeasure"] = {{"first", first}, {"second", second}, {"threshold", bar}};
      double gap = std::abs(first - second) / std::max(1e-9, std::min(first, second));
      if (gap > o.remeasure_disagreement)
        r.add_flag("remeasure_disagreement", Severity::warn,
                   "a fresh process measured " + std::to_string(second) + "x against " + std::to_string(first) +
                       "x the first time; the lower figure stands");
    }
    if (r.has_blocking_flag() && r.status == Status::ok) {
      r.status = Status::rejected;
      r.error = "timing could not be trusted: " + first_blocking_evidence(r);
    }
  }
  if (o.attribution) {
    report("attribution", 0.9);
    attribute(session, *cand_ptr, cand_src, r);
    if (r.has_blocking_flag() && r.status == Status::ok) {
      r.status = Status::rejected;
      r.error = first_blocking_evidence(r);
    }
  }
  if (o.baselines && r.status == Status::ok && r.speedup.count("eager")) {
    // Nothing of the candidate may run while the baselines are timed: it is done, so it goes.
    cand_ptr->shutdown();
    KeyedMutex::Guard one_lane = one_lane_per_task("baselines");
    report("baselines", 0.95);
    add_baselines(o, p.python, env, r, [&] { report("baseline timing", 0.97); });
  }
  credit_degenerate_task(r);
  return finish(r);
}

// A candidate worker killed from outside gets a second, fresh evaluation: new processes and
// folders (prepare_evaluation again), the first one's memory reservation given back first.
EvalResult run_evaluation(PreparedEvaluation& first) {
  PreparedPtr again;
  return retry_infrastructure_faults([&](int attempt) {
    if (attempt > 0) {
      first.memory.release();
      again = prepare_evaluation(first.o);
    }
    PreparedEvaluation& p = attempt > 0 ? *again : first;
    Attempt a;
    a.oom_kills_before = p.oom_kills_at_start;
    try {
      a.result = run_once(p);
    } catch (const Error& e) {
      // The reference's failures are the task's (a thrown Error), except running out of GPU
      // memory that other processes hold: that is the machine's, retried like the candidate's.
      auto oom = parse_device_out_of_memory(e.message());
      if (!oom || !oom->others_to_blame()) throw;
      a.result = std::move(p.r);
      a.result.status = Status::runtime_error;
      a.result.accepted = false;
      a.result.error = "the reference ran out of GPU memory: " + e.message();
    }
    if (p.cand) a.candidate_exit = p.cand->process().exit_info();
    a.oom_kills_after = oom_kill_count();
    return a;
  });
}

}  // namespace cudal1

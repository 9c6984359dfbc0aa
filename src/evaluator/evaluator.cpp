#include "evaluator/evaluator.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>

#include "core/error.h"
#include "core/format.h"
#include "core/hash.h"
#include "core/host.h"
#include "evaluator/evaluation.h"
#include "evaluator/light_check.h"
#include "evaluator/prebuilt.h"
#include "evaluator/shadowing.h"
#include "evaluator/verdicts.h"
#include "runner/python.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

constexpr const char* kDistributions[] = {"normal", "scaled_offset", "heavy_tailed"};
constexpr int kInits = 2;

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

// GPU memory an evaluation holds besides what its reference reports: two CUDA contexts (the
// reference's and the candidate's workers). Its footprint is three times the reference's peak:
// the candidate's worker holds the same inputs and its own outputs, and the precision oracle's
// float64 copy or a baseline's compiled model comes on top for a while. A task not measured
// yet is first assumed as large as the largest seen, else this large.
constexpr uint64_t kDeviceContexts = uint64_t(3) << 29;
constexpr uint64_t kFirstDeviceGuess = uint64_t(4) << 30;

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
    all += bytes;
    largest = std::max(largest, bytes);
  }
  return inputs + all + 4 * largest;
}

}  // namespace

std::string EvalProtocol::protocol_key() const {
  // Everything that changes what a figure means: a quick 3-bucket run or a fixed seed is not
  // the default protocol and must not answer for it.
  std::string key = std::string(kProtocolVersion) + ";tol=" + tolerance_mode_name(tolerance) +
                    ";timing=" + (timing ? "on" : "off");
  if (buckets > 0) key += ";buckets=" + std::to_string(buckets);
  if (calls_per_bucket > 0) key += ";calls=" + std::to_string(calls_per_bucket);
  if (seed) key += ";seed=" + std::to_string(*seed);
  if (allow_reduced_precision) key += ";precision=reduced-allowed";
  for (auto& [name, value] : extra_env) key += ";env:" + name + "=" + value;
  return key;
}

void PreparedDeleter::operator()(PreparedEvaluation* p) const { delete p; }

// What candidate and reference code alike must not see: the folders of the protected files
// (the store: its journal and key files appear beside it) whole, and the hidden paths.
std::vector<std::string> hidden_from_sandboxes(const EvalOptions& o) {
  std::vector<std::string> hidden;
  for (auto& f : o.protect_files) hidden.push_back(fs::absolute(f).parent_path().string());
  for (auto& d : o.hidden_paths) hidden.push_back(d);
  return hidden;
}

namespace {

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
  p->shared = root / "inputs";
  p->secret = root / "expected";
  p->ref_dir = root / "reference";
  p->cand_dir = root / "candidate";
  p->oracle_dir = root / "oracle";
  for (auto& d : {p->shared, p->secret, p->ref_dir, p->cand_dir, p->oracle_dir}) fs::create_directories(d);
  p->plan = make_plan(o.seed);

  // The trusted reference and the untrusted candidate start now and import torch while the
  // caller does other work; neither touches the GPU before run_evaluation asks it to.
  WorkerSpec rs{WorkerRole::reference, p->python, p->ref_dir.string(), o.device, {}, {}};
  rs.env = o.extra_env;
  rs.limits.output_bytes = std::size_t(64) << 20;
  // Trusted to define the answers, not to touch anything else: a task may be a client's. It
  // writes the inputs, the expected outputs and the oracle, and reads its own file.
  rs.sandbox = SandboxPolicy{.writable = {p->shared.string(), p->secret.string(), p->oracle_dir.string()},
                             .readable = {r.task_path}, .hidden = hidden_from_sandboxes(o)};
  p->ref = std::make_unique<Worker>(rs);

  WorkerSpec& cspec = p->cspec;
  cspec = {WorkerRole::candidate, p->python, p->cand_dir.string(), o.device, {}, {}};
  cspec.env = o.extra_env;
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
    p->extension_folder = ExtensionFolderClaim(ext_root / own);  // clears a killed build's lock
    cspec.extensions_dir = (ext_root / own).string();
    cspec.limits.hide_dirs = {{ext_root.string(), own, (p->cand_dir / ".stage").string()}};
  }  // else: a fresh folder inside the candidate's workdir, the stock way (one build per candidate)
  cspec.limits.hide_dirs.push_back({p->oracle_dir.string(), "", ""});
  for (auto& f : o.protect_files)
    if (fs::exists(f)) cspec.limits.hide_files.push_back(fs::absolute(f).string());
  cspec.sandbox = candidate_sandbox(o, r.candidate_path, p->shared);
  stage_builds(*p);
  if (int n = p->extension_folder.stale_locks_removed()) p->r.build["stale_build_locks_removed"] = n;
  p->cand = std::make_unique<Worker>(cspec);
  p->prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

EvalResult evaluate(const EvalOptions& options) {
  PreparedPtr p = prepare_evaluation(options);
  return run_evaluation(*p);
}

namespace {

// The task's own lint: a speedup on a task a null kernel passes is labelled as such.
void stage_lint(PreparedEvaluation& p, StageClock& stages) {
  KeyedMutex::Guard one_lane = one_lane_per_task(p, stages, "lint");
  stages.enter(Stage::lint);
  try {
    TaskLint lint = p.o.task_facts->lint(task_query(p));
    p.r.task_lint = lint.record;
    for (auto& f : lint.flags) p.r.add_flag(f.id, f.severity, f.evidence);
  } catch (const Error& e) {
    p.r.task_lint = {{"error", e.message()}};  // the evaluation below reports a broken task itself
  }
}

// The trusted reference: inputs, weights and expected outputs; the calls' time limits fitted to
// it, and the provenance of the figures to come.
ReferenceRun stage_reference(PreparedEvaluation& p, StageClock& stages) {
  const EvalOptions& o = p.o;
  EvalResult& r = p.r;
  stages.enter(Stage::reference);
  ReferenceRun ref;
  json request = {{"op", "load_task"}, {"task", r.task_path}, {"workdir", p.shared.string()},
                  {"private", p.secret.string()}, {"inits", p.plan.inits},
                  {"cases", p.plan.cases}};
  start_worker_device(*p.ref, seconds_to_ms(kWorkerStartS));
  ref.loaded = reference_call(*p.ref, request, seconds_to_ms(o.build_timeout_s), o.task_path).body;
  for (auto& c : ref.loaded["cases"]) {
    fs::path f = c["expected"].get<std::string>();
    ref.expected.push_back(read_tensor_file(f));
    fs::remove(f);  // gone from disk before any candidate code runs
  }
  fs::remove_all(p.secret);
  if (o.memory_budget) {
    uint64_t footprint = evaluation_footprint(p.shared, ref.expected);
    o.memory_budget->remember(r.task_hash, footprint);
    p.memory.resize(worker_bytes(o.device) + footprint);
  }
  if (o.device_memory_budget) {
    uint64_t footprint = 3 * ref.loaded.value("device_memory", uint64_t(0));
    o.device_memory_budget->remember(r.task_hash, footprint);
    p.device_memory.resize(kDeviceContexts + footprint);
  }
  ref.timeouts = fit_call_timeouts(o.call_timeout_s, reference_call_ms(ref.loaded["cases"]));
  r.budgets = ref.timeouts.to_json(o.build_timeout_s);
  const json& env = ref.loaded["env"];
  r.provenance = {{"protocol", kProtocolVersion}, {"protocol_key", o.protocol_key()},
                  {"device", o.device}, {"device_name", env.value("device_name", "")},
                  {"driver", env.value("driver", json(nullptr))}, {"torch", env.value("torch", "")},
                  {"cuda", env.value("cuda", json(nullptr))}, {"python", env.value("python", "")},
                  {"host", host_name()}, {"cudal1", CUDAL1_VERSION},
                  {"tolerance", tolerance_mode_name(o.tolerance)}, {"seed", p.plan.base_seed},
                  {"cases", p.plan.cases}, {"sandbox", sandbox_support().describe()}};
  return ref;
}

// What the candidate's process loads: its module, and where the reference left inputs and
// weights (a fresh process for re-timing loads the same).
json candidate_load_request(const PreparedEvaluation& p, const json& loaded) {
  json case_meta = json::array();
  for (auto& c : loaded.value("cases", json::array()))
    case_meta.push_back({{"file", c.value("file", json())}, {"init", c.value("init", json())},
                         {"outputs", c.value("outputs", json())}});
  json init_meta = json::array();
  for (auto& i : loaded.value("inits", json::array()))
    init_meta.push_back({{"file", i.value("file", json())}});
  json request = {{"op", "load_candidate"}, {"candidate", p.r.candidate_path},
                  {"inits", init_meta}, {"cases", case_meta},
                  {"ctor", loaded.value("ctor", json())}};
  if (!p.prebuilt.is_null()) request["prebuilt"] = p.prebuilt;
  return request;
}

// The untrusted candidate, in its own unprivileged process (started by prepare_evaluation).
Verdict stage_load_candidate(PreparedEvaluation& p, const json& load_request, StageClock& stages) {
  EvalResult& r = p.r;
  stages.enter(Stage::candidate);
  start_worker_device(*p.cand, seconds_to_ms(kWorkerStartS));
  WorkerReply lr = p.cand->request(load_request, seconds_to_ms(p.o.build_timeout_s));
  // Which load_inline calls the prebuilt modules answered, as the candidate's process tells it:
  // for a person reading the result (a "missed" call compiled in that process), never a verdict.
  if (lr.kind == WorkerReply::Kind::ok && lr.body.contains("prebuilt"))
    r.build["calls_reported"] = lr.body["prebuilt"];
  Verdict failed = candidate_failure(lr, "loading the candidate", p.cand->stderr_tail(), r);
  if (!failed.ok()) return failed;
  apply_guard_evidence(lr.body, false, r);
  for (auto& name : shadowed_task_names(p.task_src, p.cand_src))
    r.add_flag("task_constants_shadowed", Severity::warn,
               "the candidate redefines the task's " + name + "; inputs still come from the task");
  return {};
}

// With a freezing gate, this evaluation's processes join its member: another lane's timing
// may stop them. Workers started while the returned scope lives join too.
std::optional<DeviceGate::Member::Scope> join_device_gate(PreparedEvaluation& p) {
  if (!p.o.device_gate || !p.o.device_gate->freezes()) return std::nullopt;
  p.member = std::make_unique<DeviceGate::Member>(p.o.device_gate.get());
  p.ref->join(p.member.get());
  p.cand->join(p.member.get());
  return std::optional<DeviceGate::Member::Scope>(std::in_place, p.member.get());
}

// The workers go, the status is the verdict, and the device is given back.
EvalResult& finish(PreparedEvaluation& p, const Verdict& verdict, StageClock& stages) {
  p.cand->shutdown();
  p.ref->shutdown();
  p.r.status = verdict.status;
  p.r.error = verdict.error;
  p.r.accepted = p.r.status == Status::ok && !p.r.has_blocking_flag();
  if (auto waited = stages.timing_turn_given_up())
    p.r.add_flag("device_shared", Severity::warn,
                 "another cudal1 process kept its turn at timing this device for " +
                     format_fixed(*waited, 0) + " s; timed without the turn, so the figures may carry its load");
  stages.enter(Stage::done);
  return p.r;
}

}  // namespace

TaskQuery task_query(const PreparedEvaluation& p) {
  return {p.o.task_path, p.o.device, p.python, p.o.tolerance, hidden_from_sandboxes(p.o)};
}

KeyedMutex::Guard one_lane_per_task(const PreparedEvaluation& p, StageClock& stages,
                                    const std::string& what) {
  if (!p.o.task_facts || !p.o.task_facts->shared()) return KeyedMutex::Guard();
  return stages.one_lane_per_task(what + "|" + p.r.task_hash + "|" + p.o.device + "|" +
                                  p.o.protocol_key());
}

// One attempt at the evaluation, its stages in the order docs/evaluation.md's "Status and
// precedence" reads; run_evaluation below runs it again when the machine killed the candidate.
static EvalResult run_once(PreparedEvaluation& p) {
  const EvalOptions& o = p.o;
  EvalResult& r = p.r;
  r.phase_seconds["prepare"] = p.prepare_seconds;
  std::optional<DeviceGate::Member::Scope> joined = join_device_gate(p);
  // On CUDA, timing also takes the machine's turn for the device: other cudal1 processes there
  // know nothing of this one's device gate (core/timing_turn.h).
  StageClock stages(r.phase_seconds, o.device_gate, p.member.get(), o.progress,
                    is_cuda_device(o.device) ? o.device : std::string());
  // Host memory before anything of the device is held: an evaluation waiting here must not keep
  // another from the exclusive hold it needs to finish and free its memory.
  if (o.memory_budget)
    p.memory = stages.reserve_memory(*o.memory_budget, worker_bytes(o.device) +
                                     o.memory_budget->estimate(r.task_hash, kFirstFootprintGuess));
  if (o.device_memory_budget)
    p.device_memory = stages.reserve_memory(*o.device_memory_budget,
                                            kDeviceContexts + o.device_memory_budget->estimate(r.task_hash, kFirstDeviceGuess));
  if (o.lint && o.task_facts) stage_lint(p, stages);
  std::mt19937_64 rng(p.plan.base_seed ^ 0x9e3779b97f4a7c15ull);
  const ReferenceRun ref = stage_reference(p, stages);
  const json load_request = candidate_load_request(p, ref.loaded);
  Verdict v = settle_status(Step::candidate, stage_load_candidate(p, load_request, stages), r);
  if (!v.ok()) return finish(p, v, stages);
  Session session{o, *p.ref, o.task_path, int(ref.expected.size()), std::mt19937_64(rng()), {}};
  session.candidate = p.cand.get();
  session.call_timeout_s = ref.timeouts.call_s;
  // The idle check after the timed buckets needs no device: another lane may time meanwhile.
  session.timing_done = [&] { stages.enter(Stage::idle_check); };

  std::vector<TensorValue> first_actual;  // case 0's outputs, for the precision ladder
  v = settle_status(Step::cases, check_cases(p, session, ref, stages, first_actual), r);
  if (!v.ok()) return finish(p, v, stages);
  if (o.precision_check) {
    stages.enter(Stage::precision);
    OthersStopped stopped(session);
    Verdict found = check_precision(p, session, ref.expected[0], first_actual);
    v = settle_status(Step::precision, found, r);
  }
  if (!v.ok()) return finish(p, v, stages);
  if (o.timing)
    v = settle_status(Step::timing, time_candidate(p, session, load_request, stages), r);
  if (v.stops) return finish(p, v, stages);
  // Attribution still runs after a rejected timing: its figures tell a person why.
  if (o.attribution) {
    stages.enter(Stage::attribution);
    attribute(session, *p.cand, p.cand_src, r);
    if (v.ok()) v = settle_status(Step::attribution, {}, r);
  }
  if (v.ok() && o.task_facts && r.runtime_ms.count("candidate") && r.runtime_ms.count("eager") &&
      r.runtime_ms["eager"] >= kLightCheckAbove * r.runtime_ms["candidate"]) {
    check_speed_of_light(p, stages);
    v = settle_status(Step::speed_of_light, {}, r);
  }
  if (v.ok() && o.baselines && o.task_facts && r.speedup.count("eager"))
    add_baselines(p, ref.loaded.value("env", json()), stages);
  credit_degenerate_task(r);
  return finish(p, v, stages);
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
      // memory that other processes hold (the reference's, or a worker's as it took the device):
      // that is the machine's, retried like the candidate's.
      auto oom = parse_device_out_of_memory(e.message());
      if (!oom || !oom->others_to_blame()) throw;
      a.result = std::move(p.r);
      a.result.status = Status::runtime_error;
      a.result.accepted = false;
      a.result.error = "out of GPU memory that other processes held: " + e.message();
    }
    if (p.cand) a.candidate_exit = p.cand->process().exit_info();
    a.oom_kills_after = oom_kill_count();
    return a;
  });
}

}  // namespace cudal1

#include "baselines/baselines.h"

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "core/stats.h"
#include "evaluator/evaluator.h"
#include "evaluator/result.h"
#include "evaluator/timing.h"
#include "runner/python.h"
#include "runner/worker.h"
#include "store/store.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

const std::vector<std::string>& baseline_names() {
  static const std::vector<std::string> names = {"compile", "compile_ro", "cuda_graph", "cudnn_autotune"};
  return names;
}

const BaselineFigure* BaselineSet::find(const std::string& name) const {
  for (auto& f : figures)
    if (f.name == name) return &f;
  return nullptr;
}

json BaselineSet::to_json() const {
  json figs = json::object();
  for (auto& f : figures) {
    if (f.ratio)
      figs[f.name] = {{"ratio", *f.ratio}, {"eager_ms", f.eager_ms}, {"baseline_ms", f.baseline_ms}, {"spread", f.spread},
                      {"copied_calls", f.copied_calls}};
    else
      figs[f.name] = {{"unavailable", f.unavailable}};
  }
  return {{"version", kBaselinesVersion}, {"figures", figs}, {"env", env}, {"from_cache", from_cache}};
}

BaselineSet BaselineSet::from_json(const json& j) {
  BaselineSet s;
  s.env = j.value("env", json::object());
  s.from_cache = j.value("from_cache", false);
  const json figs = j.value("figures", json::object());  // named: items() of a temporary would dangle
  for (auto& [name, f] : figs.items()) {
    BaselineFigure b{canonical_baseline_name(name), std::nullopt, f.value("eager_ms", 0.0), f.value("baseline_ms", 0.0), f.value("spread", 0.0),
                     f.value("unavailable", std::string()), f.value("copied_calls", 0)};
    if (f.contains("ratio")) b.ratio = f["ratio"].get<double>();
    s.figures.push_back(b);
  }
  return s;
}

BaselineFigure baseline_figure(const std::string& name, const json& buckets) {
  BaselineFigure f{name, std::nullopt, 0, 0, 0, {}};
  std::vector<double> ratios, eager, base;
  for (auto& pair : buckets) {
    double e = pair.at(0).get<double>(), b = pair.at(1).get<double>();
    if (!(e > 0) || !(b > 0)) continue;
    ratios.push_back(b / e), eager.push_back(e), base.push_back(b);
  }
  if (ratios.empty()) {
    f.unavailable = "no bucket gave a positive time";
    return f;
  }
  f.ratio = median(ratios);
  f.eager_ms = median(eager);
  f.baseline_ms = median(base);
  f.spread = (quantile(ratios, 0.75) - quantile(ratios, 0.25)) / *f.ratio;
  return f;
}

namespace {

// The compile baselines were first cached as compile_default and compile_reduce_overhead; keys
// keep that spelling, so the same measurement keeps its cached answer.
std::vector<std::string> names_as_first_cached(std::vector<std::string> names) {
  for (auto& n : names)
    for (const RenamedBaseline& r : kRenamedBaselines)
      if (n == r.now) n = r.earlier;
  return names;
}

}  // namespace

std::string baselines_cache_key(const std::string& task_hash, const json& env, const std::vector<std::string>& names,
                                const TimingSettings& ts) {
  json parts = {{"task", task_hash},
                {"device_name", env.value("device_name", "")},
                {"driver", env.value("driver", json(nullptr))},
                {"torch", env.value("torch", "")},
                {"cuda", env.value("cuda", json(nullptr))},
                {"python", env.value("python", "")},
                {"protocol", kProtocolVersion},
                {"names", names_as_first_cached(names)},
                {"buckets", ts.buckets},
                {"calls", ts.calls},
                {"warmup", ts.warmup},
                {"settle", ts.settle}};
  return "baselines:" + sha256_hex(parts.dump());
}

BaselineSet measure_baselines(const BaselineOptions& o) {
  if (!fs::exists(o.task_path))
    throw Error(ErrorKind::input, "no task file " + o.task_path, "check the path");
  std::vector<std::string> names = o.names.empty() ? baseline_names() : o.names;
  for (auto& n : names) n = canonical_baseline_name(n);  // a job from an older producer
  std::string task_hash = sha256_hex(read_file(o.task_path));
  const TimingSettings ts = timing_settings(is_cuda_device(o.device), o.buckets, o.calls, o.warmup);
  auto from_cache = [&](const json& env) -> std::optional<BaselineSet> {
    if (!o.store) return std::nullopt;
    auto hit = o.store->find_cached(baselines_cache_key(task_hash, env, names, ts), kBaselinesVersion);
    if (!hit) return std::nullopt;
    BaselineSet s = BaselineSet::from_json(*hit);
    s.from_cache = true;
    return s;
  };
  // An evaluation knows the environment from its reference worker: a cached answer then costs
  // no process at all.
  if (!o.env.empty())
    if (auto s = from_cache(o.env)) return *s;
  fs::path home = make_private_dir("cudal1-baselines", scratch_parent());
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{home};
  WorkerSpec spec{WorkerRole::reference, find_python(o.python), home.string(), o.device, {}, {}};
  spec.limits.output_bytes = std::size_t(16) << 20;
  // The task is code from outside.
  spec.sandbox = SandboxPolicy{.readable = {fs::absolute(o.task_path).string()}, .hidden = o.hidden};
  Worker worker(spec);
  auto timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  json env = o.env;
  if (env.empty()) {
    env = reference_call(worker, {{"op", "env"}}, timeout, o.task_path).body.value("env", json::object());
    if (auto s = from_cache(env)) {
      worker.shutdown();
      return *s;
    }
  }
  std::string key = baselines_cache_key(task_hash, env, names, ts);
  json req = {{"op", "baselines_prepare"}, {"task", fs::absolute(o.task_path).string()}, {"names", names},
              {"buckets", ts.buckets}, {"calls", ts.calls}, {"warmup", ts.warmup}, {"settle", ts.settle}};
  reference_call(worker, req, timeout, o.task_path);
  if (o.before_timing) o.before_timing();
  req["op"] = "baselines_time";
  json reply = reference_call(worker, req, timeout, o.task_path).body;
  worker.shutdown();
  BaselineSet s;
  s.env = env;
  for (auto& name : names) {
    const json& r = reply.at("baselines").value(name, json::object());
    if (!r.contains("buckets")) {
      s.figures.push_back({name, std::nullopt, 0, 0, 0, r.value("unavailable", std::string("not measured"))});
      continue;
    }
    s.figures.push_back(baseline_figure(name, r["buckets"]));
    s.figures.back().copied_calls = r.value("copied_calls", 0);
  }
  if (o.store) o.store->save_cached(key, kBaselinesVersion, s.to_json());
  return s;
}

}  // namespace cudal1

// lint/lint.cpp — the probe in the trusted reference worker (src/runner/py/lint.py), and the
// store's cache in front of it.
#include "lint/lint.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "runner/python.h"
#include "runner/worker.h"
#include "store/store.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

namespace {

// Fixed seeds: the lint describes the task, not a candidate, so nothing here needs to be
// secret, and a task lints the same way every time, which is what makes caching it sound.
// Both inits see the same case draws, so "other weights, same inputs" costs no extra call.
constexpr uint64_t kInitSeeds[] = {1001, 1002};
constexpr std::pair<const char*, uint64_t> kDraws[] = {
    {"normal", 2001}, {"scaled_offset", 2002}, {"heavy_tailed", 2003},
    {"normal", 2004},  // the probe: what an input-independent kernel would have precomputed
};

std::string file_hash(const std::string& path) { return sha256_hex(read_file(path)); }

// Keyed by the kind of device: whether a null kernel passes does not depend on which GPU of a
// machine ran the probe ("cuda", "cuda:0" and "cuda:3" share one entry).
std::string cache_key(const std::string& hash, const std::string& device, const LintTolerance& tol) {
  std::string kind = device.substr(0, device.find(':'));
  return "lint:" + hash + ":" + kind + ":" + tol.name();
}

}  // namespace

Tolerance LintTolerance::for_dtype(DType dtype) const {
  return atol_rtol ? tolerance_for(dtype, *atol_rtol) : tolerance_for(dtype, mode);
}

std::string LintTolerance::name() const { return atol_rtol ? number(*atol_rtol) : tolerance_mode_name(mode); }

std::string LintTolerance::number(double v) {
  char b[32];
  double exponent = std::round(std::log10(v));
  if (v > 0 && std::fabs(v / std::pow(10.0, exponent) - 1) < 1e-9) std::snprintf(b, sizeof b, "1e%d", int(exponent));
  else std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

LintGrid lint_probe(const LintOptions& o) {
  file_hash(o.task_path);  // Error(input) naming the file, before any process starts
  std::string python = find_python(o.python);
  struct Scratch {
    fs::path root = make_private_dir("cudal1-lint");
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(root, ec);
    }
  } scratch;
  fs::path outputs = scratch.root / "outputs", home = scratch.root / "reference";
  fs::create_directories(outputs);
  fs::create_directories(home);

  WorkerSpec spec{WorkerRole::reference, python, home.string(), o.device, {}, {}};
  spec.limits.output_bytes = std::size_t(64) << 20;
  spec.limits.memory_bytes = o.memory_limit_mb << 20;
  // A task file is code from outside too (a client's, a kernel set's): it runs confined.
  spec.sandbox = SandboxPolicy{.writable = {outputs.string()}, .readable = {fs::absolute(o.task_path).string()},
                               .hidden = o.hidden};
  Worker worker(spec);
  json inits = json::array(), draws = json::array();
  LintGrid g;
  for (uint64_t s : kInitSeeds) inits.push_back(s), g.init_seeds.push_back(s);
  for (auto& [dist, seed] : kDraws) {
    draws.push_back({{"dist", dist}, {"seed", seed}});
    g.draw_dists.push_back(dist);
    g.draw_seeds.push_back(seed);
  }
  json req = {{"op", "lint_task"}, {"task", fs::absolute(o.task_path).string()},
              {"workdir", outputs.string()}, {"inits", inits}, {"inputs", draws}};
  auto timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  json reply = reference_call(worker, req, timeout, o.task_path).body;
  worker.shutdown();

  // The parent holds all 8 outputs at once; a task whose outputs alone exceed the memory budget
  // (several KernelBench tasks have 2-6 GiB outputs) is refused rather than left to the OOM killer.
  std::uintmax_t total = 0, files = 0;
  for (auto& row : reply.at("outputs"))
    for (auto& f : row) {
      total += fs::file_size(f.get<std::string>());
      ++files;
    }
  if (o.memory_limit_mb && total > std::uintmax_t(o.memory_limit_mb) << 20)
    throw Error(ErrorKind::runner,
                o.task_path + ": its " + std::to_string(files) +
                    " reference outputs total " + std::to_string(total >> 20) + " MiB, more than the " +
                    std::to_string(o.memory_limit_mb) + " MiB memory limit lets the lint hold",
                "lint it on a machine with more memory, with a higher --memory-limit-mb");
  for (auto& row : reply.at("outputs")) {
    g.outputs.emplace_back();
    for (auto& f : row) {
      g.outputs.back().push_back(read_tensor_file(f.get<std::string>()));
      fs::remove(f.get<std::string>());  // large outputs: hold them once, in memory
    }
  }
  const json& first = reply.at("inits").at(0);
  g.has_weights = first.value("state_elements", 0) > 0;
  for (auto& i : reply["inits"]) g.weights_differ |= i.value("state_sha256", "") != first.value("state_sha256", "");
  g.env = reply.value("env", json::object());
  return g;
}

LintResult lint_task(const LintOptions& o) { return lint_task_cached(o, {o.tolerance}, nullptr).at(0); }

std::vector<LintResult> lint_task_cached(const LintOptions& o, const std::vector<LintTolerance>& tolerances,
                                         Store* store) {
  std::string hash = file_hash(o.task_path);
  std::vector<std::optional<LintResult>> found(tolerances.size());
  bool complete = true;
  for (std::size_t i = 0; i < tolerances.size(); ++i) {
    if (store)
      if (auto hit = store->find_cached(cache_key(hash, o.device, tolerances[i]), kLintVersion)) {
        found[i] = LintResult::from_json(*hit);
        found[i]->from_store = true;
        found[i]->task_path = o.task_path;  // the content is what was linted; the path is today's
      }
    complete &= found[i].has_value();
  }
  std::optional<LintGrid> grid;
  if (!complete) grid = lint_probe(o);
  std::vector<LintResult> results;
  for (std::size_t i = 0; i < tolerances.size(); ++i) {
    if (!found[i]) {
      found[i] = lint_decide(*grid, tolerances[i]);
      found[i]->task_path = o.task_path;
      found[i]->task_hash = hash;
      found[i]->device = o.device;
      if (store) store->save_cached(cache_key(hash, o.device, tolerances[i]), kLintVersion, found[i]->to_json());
    }
    results.push_back(std::move(*found[i]));
  }
  return results;
}

LintResult lint_task_cached(const std::string& task_path, const std::string& device, ToleranceMode mode,
                            Store* store, const std::string& python, const std::vector<std::string>& hidden) {
  LintOptions o;
  o.hidden = hidden;
  o.task_path = task_path;
  o.device = device;
  o.python = python;
  o.tolerance.mode = mode;
  return lint_task_cached(o, {o.tolerance}, store).at(0);
}

}  // namespace cudal1

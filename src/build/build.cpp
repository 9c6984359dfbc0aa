#include "build/build.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "build/cache.h"
#include "build/jobs.h"
#include "build/module_build.h"
#include "build/ninja_file.h"
#include "build/pch.h"
#include "build/python_side.h"
#include "build/shell.h"
#include "core/error.h"
#include "core/paths.h"
#include "runner/python.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace cudal1 {

const char* build_kind_name(BuildOutcome::Kind kind) {
  switch (kind) {
    case BuildOutcome::Kind::none: return "none";
    case BuildOutcome::Kind::built: return "built";
    case BuildOutcome::Kind::compile_error: return "compile_error";
    case BuildOutcome::Kind::capture_failed: return "capture_failed";
  }
  return "?";
}

json BuildOutcome::to_json() const {
  json mods = json::array(), local = json::array();
  for (auto& m : modules) {
    json j = {{"spec_id", m.spec_id}, {"name", m.name}, {"so", m.so_path}, {"path", m.path},
              {"cache_hit", m.cache_hit}, {"seconds", m.seconds}};
    if (!m.error.empty()) j["error"] = m.error;
    if (!m.notes.empty()) j["notes"] = m.notes;
    if (!m.content_id.empty()) j["content_id"] = m.content_id;
    mods.push_back(j);
  }
  for (auto& [name, why] : in_process) local.push_back({{"name", name}, {"path", "in_process"}, {"reason", why}});
  return {{"kind", build_kind_name(kind)}, {"modules", mods}, {"in_process", local}, {"log", log}, {"seconds", seconds}};
}

namespace {

fs::path default_cache_root() {
  if (const char* env = std::getenv("CUDAL1_CACHE"); env && *env) return fs::path(env) / "builds";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "cudal1" / "builds";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "cudal1" / "builds";
}

// First line of `cxx --version` and last line of `nvcc --version`: compilers are part of the key.
std::string compiler_versions(const std::string& cxx, const std::string& nvcc) {
  std::string cmd = cxx + " --version 2>&1 | head -1; " + cxx + " -dumpmachine 2>&1; ";
  if (!nvcc.empty()) cmd += nvcc + " --version 2>&1 | tail -2";
  return sh_output(cmd, 60);
}

}  // namespace

struct BuildService::Impl {
  BuildConfig cfg;
  fs::path root;
  CacheLayout layout;
  JobPool pool;
  PchCache pch;
  Preparer prep;
  std::mutex mutex;
  std::optional<std::string> arch;
  std::optional<json> env;
  std::map<std::string, std::string> fingerprints;  // by compilers
  std::optional<ClangHost> clang;

  explicit Impl(BuildConfig c)
      : cfg(std::move(c)),
        root(cfg.cache_root.empty() ? default_cache_root() : fs::path(cfg.cache_root)),
        layout(root),
        pool(root, cfg.jobs, cfg.memory_budget_mb),
        pch(layout, pool),
        prep(cfg.python, {root.string(), extension_cache_dir().string()}),
        clang(cfg.fast_path ? find_clang(cfg.clang) : std::nullopt) {}

  std::string arch_list(const std::string& device) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!arch) {
      const char* env_arch = std::getenv("TORCH_CUDA_ARCH_LIST");
      if (!cfg.arch_list.empty()) arch = cfg.arch_list;
      else if (env_arch && *env_arch) arch = env_arch;
      else if (device.rfind("cuda", 0) == 0) arch = prep.cuda_arch();
      else arch = "";
    }
    return *arch;
  }

  std::string fingerprint(const ModuleRequest& req, const std::string& archs) {
    NinjaFile nf = parse_ninja(req.files.at("build.ninja"));
    std::string tools = nf.var("cxx") + "|" + nf.var("nvcc");
    std::lock_guard<std::mutex> lock(mutex);
    if (!env) env = prep.environment();
    auto it = fingerprints.find(tools);
    if (it == fingerprints.end())
      it = fingerprints.emplace(tools, compiler_versions(nf.var("cxx"), nf.var("nvcc"))).first;
    return json{{"torch", env->value("torch", "")}, {"cuda", env->value("cuda", json(nullptr))},
                {"python", env->value("python", "")}, {"compilers", it->second}, {"arch_list", archs},
                {"clang", clang ? clang->version : ""}}
        .dump();
  }
};

BuildService::BuildService(BuildConfig config) {
  if (config.python.empty()) config.python = find_python();
  impl_ = std::make_unique<Impl>(std::move(config));
  impl_->prep.warm();  // torch imports there while the first capture runs
}

BuildService::~BuildService() = default;

const BuildConfig& BuildService::config() const { return impl_->cfg; }

BuildOutcome BuildService::build_candidate(const std::string& candidate_path, const std::string& device, double timeout_s,
                                          const std::string& task_path) {
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  BuildOutcome out;
  auto done = [&]() -> BuildOutcome {
    out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return out;
  };
  if (!fs::exists(candidate_path))
    throw Error(ErrorKind::input, "no candidate file " + candidate_path, "check the path");
  CaptureOptions co{impl_->cfg.python, candidate_path, device, timeout_s, 8192, {impl_->root.string(), extension_cache_dir().string()},
                    {default_store_path().string()}, task_path};
  // A constructor that hangs or floods memory must not cost the calls the import makes: it gets
  // half the time, and a capture whose worker failed is redone without it (an import that fails
  // fails before the constructor runs).
  auto left_s = [&] { return std::max(1.0, timeout_s - std::chrono::duration<double>(Clock::now() - start).count()); };
  if (!co.task.empty()) co.timeout_s = std::min(timeout_s / 2, 180.0);
  Capture cap = capture_builds(co);
  // Told CUDA is there, an import may go on to use it behind the same test, which fails without a
  // GPU; the calls it makes where CUDA is not are better than none. The constructor's share of
  // the time stays bounded as above.
  if (cap.result == Capture::Result::import_failed && co.target != "cpu") {
    co.target = "cpu";
    co.timeout_s = co.task.empty() ? left_s() : std::min(left_s() / 2, 180.0);
    cap = capture_builds(co);
  }
  if (cap.result == Capture::Result::worker_failed && !co.task.empty()) {
    co.task.clear();
    co.timeout_s = left_s();
    cap = capture_builds(co);
  }
  if (cap.result != Capture::Result::imported) {
    out.kind = BuildOutcome::Kind::capture_failed;
    out.log = cap.message;
    return done();
  }
  std::vector<std::future<BuiltModule>> builds;
  std::vector<ModuleRequest> requests;
  requests.reserve(cap.calls.size());
  std::set<std::string> seen;
  for (auto& call : cap.calls) {
    if (!call.unsupported.empty()) {
      out.in_process.emplace_back(call.name, call.unsupported);
      continue;
    }
    if (!seen.insert(call.spec_id + "/" + call.module).second) continue;  // the same call again: one build
    try {
      std::string archs = impl_->arch_list(device);
      Prepared p = impl_->prep.prepare(call.spec, call.module, archs);
      requests.push_back({p.spec_id, p.module, p.files, call.content_id});
      ModuleContext ctx{impl_->layout, impl_->pool, impl_->pch, impl_->fingerprint(requests.back(), archs), impl_->cfg.fast_path,
                        impl_->clang ? &*impl_->clang : nullptr};
      builds.push_back(std::async(std::launch::async, [ctx, &req = requests.back(), deadline] {
        return build_module(ctx, req, deadline);
      }));
    } catch (const Error& e) {
      out.in_process.emplace_back(call.name, e.message());
    }
  }
  for (auto& b : builds) out.modules.push_back(b.get());
  out.kind = out.modules.empty() ? BuildOutcome::Kind::none : BuildOutcome::Kind::built;
  for (auto& m : out.modules)
    if (!m.error.empty()) {
      out.kind = BuildOutcome::Kind::compile_error;
      if (out.log.empty()) out.log = m.name + ": " + m.error;
    }
  return done();
}

}  // namespace cudal1

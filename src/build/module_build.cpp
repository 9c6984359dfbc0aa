#include "build/module_build.h"

#include <sys/stat.h>

#include <ctime>
#include <fstream>
#include <future>
#include <mutex>

#include "build/host_flags.h"
#include "build/ninja_file.h"
#include "build/shell.h"
#include "build/split.h"
#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace cudal1 {

namespace {

// Memory estimates per step (MiB), measured on torch 2.11's headers.
constexpr std::size_t kTorchNvccMb = 2500, kTorchGxxMb = 1500, kDeviceMb = 800, kLinkMb = 400, kCheckMb = 100;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool regular_file(const fs::path& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// What g++ said about the precompiled header it was given.
std::string pch_verdict(const std::string& output) {
  auto at = output.find("not used because");
  if (at == std::string::npos) at = output.find("Winvalid-pch");
  if (at == std::string::npos) return "used";
  auto b = output.rfind('\n', at);
  auto e = output.find('\n', at);
  return "rejected: " + output.substr(b == std::string::npos ? 0 : b + 1, e == std::string::npos ? e : e - b - 1);
}

// Torch's commands for this module, with paths relative to the job folder.
struct TorchCommands {
  std::string main, cuda, so;
  bool has_cuda = false;
  std::string link(const std::vector<std::string>& objects, const NinjaFile& nf) const { return nf.command("link", objects, so); }
};

TorchCommands torch_commands(const NinjaFile& nf) {
  TorchCommands c;
  const NinjaFile::Edge* link = nf.edge_with_rule("link");
  for (auto& e : nf.edges)
    if (e.rule != "compile" && e.rule != "cuda_compile" && e.rule != "link")
      throw Error(ErrorKind::internal, "torch's build.ninja has a step the build service does not run: " + e.rule);
  if (!nf.edge_with_rule("compile") || !link) throw Error(ErrorKind::internal, "torch's build.ninja has no compile or link step");
  c.so = link->out;
  c.main = nf.command("compile", {"main.cpp"}, "main.o");
  c.has_cuda = nf.edge_with_rule("cuda_compile") != nullptr;
  if (c.has_cuda) c.cuda = nf.command("cuda_compile", {"cuda.cu"}, "cuda.cuda.o");
  return c;
}

class Builder {
 public:
  Builder(const ModuleContext& ctx, const ModuleRequest& req, Clock::time_point deadline, fs::path job)
      : ctx_(ctx), req_(req), deadline_(deadline), job_(std::move(job)), nf_(parse_ninja(req.files.at("build.ninja"))),
        torch_(torch_commands(nf_)) {}

  const TorchCommands& torch() const { return torch_; }
  json record = {{"steps", json::array()}, {"fallbacks", json::array()}};
  std::string path = "plain", error;
  bool deterministic = true;

  bool plain() {
    auto main = later("main.cpp", torch_.main, kTorchGxxMb);
    std::future<StepResult> cuda;
    if (torch_.has_cuda) cuda = later("cuda.cu", torch_.cuda, kTorchNvccMb);
    bool ok = decide(main.get());
    if (torch_.has_cuda) ok = decide(cuda.get()) && ok;
    std::vector<std::string> objects = {"main.o"};
    if (torch_.has_cuda) objects.push_back("cuda.cuda.o");
    return ok && link(objects);
  }

  bool fast() {
    auto cxx = shell_words(nf_.var("cxx"));
    auto cflags = shell_words(nf_.var("cflags") + " " + nf_.var("post_cflags"));
    // main.cpp: torch's command with the precompiled header's folder searched first.
    std::future<StepResult> main;
    bool main_fast = false;
    if (cxx && cflags && req_.files.at("main.cpp").rfind("#include <torch/extension.h>", 0) == 0) {
      fs::path pch = ctx_.pch.find_or_start({ctx_.fingerprint, "torch/extension.h", *cxx, *cflags});
      if (!pch.empty()) {
        main_fast = true;
        main = later("main.cpp", compile_words(*cxx, pch, *cflags, "main"), kTorchGxxMb, pch);
      } else {
        note("main.cpp: its precompiled header is being built; this build compiles without it");
      }
    }
    if (!main_fast) main = later("main.cpp", torch_.main, kTorchGxxMb);
    // cuda.cu: split in two, or whole with torch's command.
    std::vector<std::string> cuda_objects;
    std::future<bool> split;
    if (torch_.has_cuda) {
      std::string why;
      auto plan = split_plan(cxx, why);
      if (plan) {
        split = std::async(std::launch::async, [this, p = *plan] { return run_split(p); });
      } else {
        note("cuda.cu compiled whole: " + why);
        split = std::async(std::launch::deferred, [] { return false; });
      }
    }
    StepResult m = main.get();
    bool main_ok = m.ok;
    if (!main_ok && main_fast && m.deterministic) {
      note("main.cpp: the precompiled-header compile failed; torch's command decides");
      main_ok = decide(run("main.cpp (torch's command)", torch_.main, kTorchGxxMb));
    } else if (!main_ok) {
      decide(m);
    } else if (main_fast) {
      path = "fast";
    }
    if (torch_.has_cuda) {
      if (split.get()) {
        cuda_objects = split_objects_;
        path = "fast";
      } else {
        if (split_tried_) note("cuda.cu compiled whole: the split build failed (" + split_problem_ + ")");
        if (!main_ok) return false;
        if (!decide(run("cuda.cu", torch_.cuda, kTorchNvccMb))) return false;
        cuda_objects = {"cuda.cuda.o"};
      }
    }
    if (!main_ok) return false;
    if (link(std::vector<std::string>{"main.o"} + cuda_objects)) return true;
    if (cuda_objects == std::vector<std::string>{"cuda.cuda.o"} || !torch_.has_cuda) return false;
    note("linking the split objects failed; cuda.cu compiled whole");
    error.clear();
    deterministic = true;
    return decide(run("cuda.cu", torch_.cuda, kTorchNvccMb)) && link({"main.o", "cuda.cuda.o"});
  }

  json split_info = nullptr;

 private:
  struct SplitPlan {
    std::string host, device, check;
    fs::path host_pch;
  };

  std::optional<SplitPlan> split_plan(const std::optional<std::vector<std::string>>& cxx, std::string& why) {
    auto nvcc = shell_words(nf_.var("cuda_cflags") + " " + nf_.var("cuda_post_cflags"));
    if (!cxx || !nvcc) return why = "torch's flags hold shell syntax the splitter does not take", std::nullopt;
    HostFlags hf = host_flags_from_nvcc(*nvcc);
    SplitResult s = split_cuda_source(req_.files.at("cuda.cu"));
    split_info = {{"ok", s.ok && hf.ok}, {"reason", s.ok ? hf.reason : s.reason}, {"kernels", s.kernels},
                  {"launches", s.launches}, {"pch_header", s.pch_header}};
    if (!s.ok) return why = s.reason, std::nullopt;
    if (!hf.ok) return why = hf.reason, std::nullopt;
    // nvcc compiles host code with -ccbin's compiler in C++ mode; the host TU does the same.
    std::vector<std::string> host_cxx = *cxx;
    if (!hf.host_compiler.empty()) {
      std::error_code ec;
      if (fs::is_directory(hf.host_compiler, ec))
        return why = "nvcc option -ccbin names a folder (" + hf.host_compiler + "): which compiler nvcc picks there is not known to the splitter", std::nullopt;
      host_cxx = {hf.host_compiler, "-x", "c++"};
    }
    SplitPlan p;
    if (!s.host_source.empty()) {
      std::ofstream(job_ / "host.cpp") << s.host_source;
      if (!s.pch_header.empty()) p.host_pch = ctx_.pch.find_or_start({ctx_.fingerprint, s.pch_header, host_cxx, hf.words});
      if (!s.pch_header.empty() && p.host_pch.empty()) note("host TU: its precompiled header is being built; this build compiles without it");
      p.host = compile_words(host_cxx, p.host_pch, hf.words, "host");
      split_objects_.push_back("host.o");
    }
    if (!s.device_source.empty()) {
      std::ofstream(job_ / "device.cu") << s.device_source;
      p.device = nf_.command("cuda_compile", {"device.cu"}, "device.o");
      split_objects_.push_back("device.o");
    }
    if (!p.host.empty() && !p.device.empty() && !s.stubs.empty())
      p.check =  // every launch stub host code calls must be defined by the device TU
          "nm -u host.o | grep -o '[^ ]*__cudal1_launch_[^ ]*' | sort -u > stubs.need; "
          "nm --defined-only device.o | grep -o '[^ ]*__cudal1_launch_[^ ]*' | sort -u > stubs.have; "
          "comm -23 stubs.need stubs.have > stubs.missing; cat stubs.missing; test ! -s stubs.missing";
    return p;
  }

  bool run_split(const SplitPlan& p) {
    split_tried_ = true;
    std::future<StepResult> host, device;
    if (!p.host.empty()) host = later("host TU", p.host, kTorchGxxMb, p.host_pch);
    if (!p.device.empty()) device = later("device TU", p.device, kDeviceMb);
    bool ok = true;
    for (auto* f : {&host, &device}) {
      if (!f->valid()) continue;
      StepResult r = f->get();
      if (!r.ok && ok) split_problem_ = r.problem;
      ok = ok && r.ok;
    }
    if (ok && !p.check.empty()) {
      StepResult r = run("launch stub check", p.check, kCheckMb);
      if (!r.ok) split_problem_ = "launch stubs missing from the device TU: " + tail(r.output, 300);
      ok = r.ok;
    }
    return ok;
  }

  std::string compile_words(const std::vector<std::string>& cxx, const fs::path& pch, const std::vector<std::string>& flags,
                            const std::string& stem) {
    std::vector<std::string> w = cxx;
    if (!pch.empty()) w = w + std::vector<std::string>{"-I" + pch.string(), "-Winvalid-pch"};
    w = w + std::vector<std::string>{"-MMD", "-MF", stem + ".o.d"} + flags;
    return shell_join(w + std::vector<std::string>{"-c", stem + ".cpp", "-o", stem + ".o"});
  }

  void note(const std::string& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    record["fallbacks"].push_back(s);
  }

  StepResult run(const std::string& name, const std::string& command, std::size_t mb, const fs::path& ro = {}) {
    StepResult r = ctx_.pool.run({name, command, job_, ro, mb}, deadline_);
    json s = {{"name", name}, {"command", command}, {"ok", r.ok}, {"seconds", r.seconds},
              {"queued_seconds", r.queued_seconds}, {"output", tail(r.output, 4000)}};
    if (!r.problem.empty()) s["problem"] = r.problem;
    if (!ro.empty()) s["pch"] = pch_verdict(r.output);
    std::lock_guard<std::mutex> lock(mutex_);
    record["steps"].push_back(s);
    return r;
  }

  std::future<StepResult> later(const std::string& name, const std::string& command, std::size_t mb, const fs::path& ro = {}) {
    return std::async(std::launch::async, [=, this] { return run(name, command, mb, ro); });
  }

  // A step of torch's own commands: its failure is the build's.
  bool decide(const StepResult& r) {
    if (r.ok) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    if (error.empty()) error = r.problem + "\n" + tail(r.output, 12000);
    deterministic = deterministic && r.deterministic;
    return false;
  }

  bool link(const std::vector<std::string>& objects) {
    return decide(run("link", torch_.link(objects, nf_), kLinkMb));
  }

  const ModuleContext& ctx_;
  const ModuleRequest& req_;
  Clock::time_point deadline_;
  fs::path job_;
  NinjaFile nf_;
  TorchCommands torch_;
  std::mutex mutex_;
  std::vector<std::string> split_objects_;
  bool split_tried_ = false;
  std::string split_problem_;
};

std::optional<BuiltModule> read_entry(const fs::path& entry, const ModuleRequest& req) {
  std::ifstream in(entry / "build.json");
  if (!in) return std::nullopt;
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception&) {
    return std::nullopt;
  }
  BuiltModule m{req.spec_id, req.module, "", j.value("path", std::string("plain")), true, 0, "", {}, req.content_id};
  for (auto& n : j.value("fallbacks", json::array()))
    if (n.is_string()) m.notes.push_back(n.get<std::string>());
  if (!j.value("ok", false)) {
    m.error = j.value("error", std::string("the build failed"));
    return m;
  }
  fs::path so = entry / j.value("so", std::string());
  if (!regular_file(so)) return std::nullopt;
  m.so_path = so.string();
  return m;
}

}  // namespace

BuiltModule build_module(const ModuleContext& ctx, const ModuleRequest& req, Clock::time_point deadline) {
  auto start = Clock::now();
  BuiltModule out{req.spec_id, req.module, "", ctx.fast ? "fast" : "plain", false, 0, "", {}, req.content_id};
  auto finish = [&](BuiltModule m) {
    m.seconds = since(start);
    return m;
  };
  fs::path job;
  try {
    NinjaFile nf = parse_ninja(req.files.at("build.ninja"));
    TorchCommands tc = torch_commands(nf);
    json files = json::object();
    for (auto& [name, text] : req.files)
      if (name != "build.ninja") files[name] = sha256_hex(text);
    std::vector<std::string> objects = {"main.o"};
    if (tc.has_cuda) objects.push_back("cuda.cuda.o");
    json commands = {tc.main, tc.cuda, tc.link(objects, nf)};
    std::string key = cache_key({{"what", "module"}, {"toolchain", ctx.fingerprint}, {"mode", ctx.fast ? "fast" : "plain"},
                                 {"files", files}, {"commands", commands}});
    fs::path entry = ctx.layout.module(key);
    if (auto hit = read_entry(entry, req)) return finish(*hit);
    KeyLock lock(ctx.layout.lock(key), deadline);
    if (!lock.held()) {
      out.error = "another build of the same module was still running at the deadline";
      return finish(out);
    }
    if (auto hit = read_entry(entry, req)) return finish(*hit);  // built while we waited
    job = ctx.layout.new_job();
    for (auto& [name, text] : req.files)
      if (name != "build.ninja") std::ofstream(job / name) << text;
    Builder b(ctx, req, deadline, job);
    bool ok = ctx.fast ? b.fast() : b.plain();
    fs::path ready = job / "entry";
    fs::create_directories(ready);
    json rec = b.record;
    rec.update({{"key", key}, {"spec_id", req.spec_id}, {"module", req.module}, {"mode", ctx.fast ? "fast" : "plain"},
                {"path", b.path}, {"ok", ok}, {"seconds", since(start)}, {"toolchain", ctx.fingerprint},
                {"created", static_cast<long long>(std::time(nullptr))}, {"split", b.split_info}});
    if (ok && !regular_file(job / b.torch().so)) {
      ok = false;
      b.error = "the link step left no regular file " + b.torch().so;
    }
    if (ok) {
      fs::rename(job / b.torch().so, ready / b.torch().so);
      rec["so"] = b.torch().so;
    } else {
      rec["error"] = b.error;
    }
    rec["ok"] = ok;
    std::ofstream(ready / "build.json") << rec.dump(2) << "\n";
    for (auto& [name, text] : req.files)
      if (name != "build.ninja") fs::copy_file(job / name, ready / name);
    // Failures are kept too (a compile error comes back the same every time), unless a kill
    // or the deadline made them.
    bool keep = ok || b.deterministic;
    if (keep) publish(ready, entry);
    std::error_code ec;
    fs::remove_all(job, ec);
    if (keep)
      if (auto done = read_entry(entry, req)) {
        done->cache_hit = false;
        return finish(*done);
      }
    out.path = b.path;
    for (auto& n : b.record["fallbacks"]) out.notes.push_back(n.get<std::string>());
    out.error = ok ? "the finished build could not be published in the cache" : b.error;
    return finish(out);
  } catch (const std::exception& e) {
    std::error_code ec;
    if (!job.empty()) fs::remove_all(job, ec);
    out.error = std::string("the build service could not build this module: ") + e.what();
    return finish(out);
  }
}

}  // namespace cudal1

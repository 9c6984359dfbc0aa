#include "build/module_steps.h"

#include <fstream>

#include "build/clang.h"
#include "build/host_flags.h"
#include "build/shell.h"
#include "build/split.h"
#include "core/error.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

namespace {

// Memory estimates per step (MiB), measured on torch 2.11's headers.
constexpr std::size_t kTorchNvccMb = 2500, kTorchGxxMb = 1500, kClangMb = 800, kDeviceMb = 800, kLinkMb = 400,
                      kCheckMb = 100;

std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

// The line of `output` that holds `needle` (at most 300 characters), or "".
std::string line_with(const std::string& output, const std::string& needle) {
  auto at = output.find(needle);
  if (at == std::string::npos) return "";
  auto b = output.rfind('\n', at);
  auto e = output.find('\n', at);
  b = b == std::string::npos ? 0 : b + 1;
  return output.substr(b, std::min<std::size_t>((e == std::string::npos ? output.size() : e) - b, 300));
}

std::string first_error(const std::string& output) {
  std::string line = line_with(output, "error");
  return line.empty() ? tail(output, 200) : line;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Whether the compiler's first diagnostic error ("error:" or "fatal error:") lies in `file`'s own
// lines ("main.cpp:12:3: error: ..."), not in a header it includes.
bool first_error_in(const std::string& output, const std::string& file) {
  return line_with(output, " error:").rfind(file + ":", 0) == 0;
}

// What g++ said about the precompiled header it was given.
std::string pch_verdict(const std::string& output) {
  std::string line = line_with(output, "not used because");
  if (line.empty()) line = line_with(output, "Winvalid-pch");
  return line.empty() ? "used" : "rejected: " + line;
}

// g++'s compile of `stem`.cpp, against the .gch folder `pch` when not empty.
std::string gxx_compile(const std::vector<std::string>& cxx, const fs::path& pch, const std::vector<std::string>& flags,
                        const std::string& stem) {
  std::vector<std::string> w = cxx;
  if (!pch.empty()) w = w + std::vector<std::string>{"-I" + pch.string(), "-Winvalid-pch"};
  w = w + std::vector<std::string>{"-MMD", "-MF", stem + ".o.d"} + flags;
  return shell_join(w + std::vector<std::string>{"-c", stem + ".cpp", "-o", stem + ".o"});
}

}  // namespace

std::string TorchCommands::link(const std::vector<std::string>& objects, const NinjaFile& nf) const {
  return nf.command("link", objects, so);
}

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

ModuleSteps::ModuleSteps(const ModuleContext& ctx, const ModuleRequest& req, std::chrono::steady_clock::time_point deadline,
                         fs::path job)
    : ctx_(ctx), req_(req), deadline_(deadline), job_(std::move(job)), nf_(parse_ninja(req.files.at("build.ninja"))),
      torch_(torch_commands(nf_)) {}

bool ModuleSteps::plain() {
  auto main = later("main.cpp", torch_.main, kTorchGxxMb);
  std::future<StepResult> cuda;
  if (torch_.has_cuda) cuda = later("cuda.cu", torch_.cuda, kTorchNvccMb);
  bool ok = decide(main.get());
  if (torch_.has_cuda) ok = decide(cuda.get()) && ok;
  std::vector<std::string> objects = {"main.o"};
  if (torch_.has_cuda) objects.push_back("cuda.cuda.o");
  return ok && link(objects);
}

bool ModuleSteps::fast() {
  auto cxx = shell_words(nf_.var("cxx"));
  auto cflags = shell_words(nf_.var("cflags") + " " + nf_.var("post_cflags"));
  // The split first: its host TU is the longest step, and the pool starts steps in turn.
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
  std::future<Compiled> main;
  if (cxx && cflags && req_.files.at("main.cpp").rfind("#include <torch/extension.h>", 0) == 0) {
    main_tu_ = Tu{"main.cpp", "main", "torch/extension.h", *cxx, *cflags, torch_.main};
    main = std::async(std::launch::async, [this] { return compile(*main_tu_); });
  } else {
    main = std::async(std::launch::async, [this] { return Compiled{run("main.cpp", torch_.main, kTorchGxxMb)}; });
  }
  bool main_ok = main_compiled(main.get());
  std::vector<std::string> cuda_objects;
  if (torch_.has_cuda) {
    if (split.get()) {
      cuda_objects = split_objects_;
    } else {
      if (split_tried_) note("cuda.cu compiled whole: the split build failed (" + split_problem_ + ")");
      if (!main_ok) return false;
      if (!decide(run("cuda.cu", torch_.cuda, kTorchNvccMb))) return false;
      cuda_objects = {"cuda.cuda.o"};
    }
  }
  if (!main_ok) return false;
  bool ok = link_fast(cuda_objects);
  if (main_clang_ || (split_used_ && host_clang_)) path = "fast+clang";
  else if (main_fast_ || split_used_) path = "fast";
  return ok;
}

bool ModuleSteps::main_compiled(const Compiled& c) {
  if (!c.result.ok) {  // torch's command, a kill, or an error in main.cpp's own lines
    if (c.fast) path = "fast";  // what decided is recorded
    return decide(c.result);
  }
  main_clang_ = c.clang;
  main_fast_ = c.fast;
  return true;
}

std::optional<ModuleSteps::Compiled> ModuleSteps::compile_with_clang(const Tu& tu) {
  if (!ctx_.clang || clang_refused_) return std::nullopt;
  ClangFlags flags = clang_flags(tu.flags);
  std::string why = !clang_may_replace(tu.cxx.front()) ? "its compiler, " + tu.cxx.front() + ", is not g++" : flags.reason;
  if (!why.empty()) {
    note(tu.label + ": g++ compiles it, not clang: " + why);
    return std::nullopt;
  }
  PchRequest req{ctx_.fingerprint, tu.header, {ctx_.clang->path}, flags.words, true};
  // Building clang's header (about 17 s on 2 cores) takes less than compiling without it (25 s).
  fs::path dir = ctx_.pch.find_or_wait(req, std::min(deadline_, std::chrono::steady_clock::now() + std::chrono::seconds(180)));
  if (dir.empty()) {
    std::string why = ctx_.pch.failure(req);
    note(tu.label + ": clang's precompiled header " + (why.empty() ? "was not built in time" : "failed (" + first_error(why) + ")") +
         "; g++ compiles it");
    return std::nullopt;
  }
  auto words = clang_compile_words(*ctx_.clang, pch_file(dir, req).string(), flags, tu.stem);
  StepResult r = run(tu.label + " (clang)", shell_join(words), kClangMb, dir);
  if (r.ok || !r.deterministic) return Compiled{r, true, true};
  note(tu.label + ": clang did not compile it (" + first_error(r.output) + "); g++ does");
  return std::nullopt;
}

ModuleSteps::Compiled ModuleSteps::compile(const Tu& tu) {
  if (auto c = compile_with_clang(tu)) return *c;
  fs::path gch = ctx_.pch.find_or_start({ctx_.fingerprint, tu.header, tu.cxx, tu.flags});
  if (gch.empty()) {
    note(tu.label + ": its precompiled header is being built; this build compiles without it");
    return {run(tu.label, tu.plain, kTorchGxxMb)};
  }
  StepResult r = run(tu.label, gxx_compile(tu.cxx, gch, tu.flags, tu.stem), kTorchGxxMb, gch);
  if (r.ok || !r.deterministic) return {r, true};
  // torch's main.cpp as torch wrote it, torch's compiler and flags: g++ takes a precompiled header
  // only where it stands for the header exactly (else it reads the header), so an error in the
  // file's own lines is the one torch's command would give, and decides without compiling again
  // (about 20 s on the H200 machine). The host TU is the splitter's text: its errors never decide.
  if (tu.stem == "main" && first_error_in(r.output, "main.cpp")) {
    note(tu.label + ": the precompiled-header compile failed in main.cpp's own lines (" + first_error(r.output) +
         "); that decides, as torch's command would");
    return {r, true};
  }
  note(tu.label + ": the precompiled-header compile failed; the plain command decides");
  return {run(tu.label + " (without precompiled header)", tu.plain, kTorchGxxMb)};
}

std::optional<ModuleSteps::SplitPlan> ModuleSteps::split_plan(const std::optional<std::vector<std::string>>& cxx,
                                                              std::string& why) {
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
    p.host = Tu{"host TU", "host", s.pch_header, host_cxx, hf.words, gxx_compile(host_cxx, {}, hf.words, "host")};
    split_objects_.push_back("host.o");
  }
  if (!s.device_source.empty()) {
    std::ofstream(job_ / "device.cu") << s.device_source;
    p.device = nf_.command("cuda_compile", {"device.cu"}, "device.o");
    split_objects_.push_back("device.o");
  }
  if (p.host && !p.device.empty() && !s.stubs.empty())
    p.check =  // every launch stub host code calls must be defined by the device TU
        "nm -u host.o | grep -o '[^ ]*__cudal1_launch_[^ ]*' | sort -u > stubs.need; "
        "nm --defined-only device.o | grep -o '[^ ]*__cudal1_launch_[^ ]*' | sort -u > stubs.have; "
        "comm -23 stubs.need stubs.have > stubs.missing; cat stubs.missing; test ! -s stubs.missing";
  host_tu_ = p.host;
  return p;
}

bool ModuleSteps::run_split(const SplitPlan& p) {
  split_tried_ = true;
  std::future<Compiled> host;
  std::future<StepResult> device;
  if (p.host) {
    const Tu& tu = *p.host;
    host = std::async(std::launch::async, [this, &tu] {
      return tu.header.empty() ? Compiled{run(tu.label, tu.plain, kTorchGxxMb)} : compile(tu);
    });
  }
  if (!p.device.empty()) device = later("device TU", p.device, kDeviceMb);
  bool ok = true;
  if (host.valid()) {
    Compiled c = host.get();
    host_clang_ = c.clang && c.result.ok;
    if (!c.result.ok) split_problem_ = c.result.problem;
    ok = c.result.ok;
  }
  if (device.valid()) {
    StepResult r = device.get();
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

bool ModuleSteps::link_fast(const std::vector<std::string>& cuda_objects) {
  std::vector<std::string> objects = std::vector<std::string>{"main.o"} + cuda_objects;
  split_used_ = torch_.has_cuda && cuda_objects == split_objects_;
  bool host_clang = split_used_ && host_clang_;
  std::future<StepResult> check;
  if (main_clang_ || host_clang)
    check = later("symbol check", undefined_symbol_check(nf_.command("link", objects, "symcheck.so")), kLinkMb);
  bool linked = link(objects);
  if (check.valid()) {
    StepResult c = check.get();
    if (!c.ok && c.deterministic) {
      note("clang's objects need symbols nothing defines (" + tail(c.output, 300) + "); g++ compiles their TUs again");
      clang_refused_ = true;
      error.clear();
      deterministic = true;
      if (main_clang_ && !main_compiled(compile(*main_tu_))) return false;
      host_clang_ = false;
      if (host_clang && !compile(*host_tu_).result.ok) {
        note("cuda.cu compiled whole: g++ did not compile the host TU");
        split_used_ = false;
        return decide(run("cuda.cu", torch_.cuda, kTorchNvccMb)) && link({"main.o", "cuda.cuda.o"});
      }
      linked = link(objects);
    }
  }
  if (linked) return true;
  if (!split_used_) return false;
  split_used_ = false;
  note("linking the split objects failed; cuda.cu compiled whole");
  error.clear();
  deterministic = true;
  return decide(run("cuda.cu", torch_.cuda, kTorchNvccMb)) && link({"main.o", "cuda.cuda.o"});
}

void ModuleSteps::note(const std::string& s) {
  std::lock_guard<std::mutex> lock(mutex_);
  record["fallbacks"].push_back(s);
}

StepResult ModuleSteps::run(const std::string& name, const std::string& command, std::size_t mb, const fs::path& ro) {
  StepResult r = ctx_.pool.run({name, command, job_, ro, mb}, deadline_);
  json s = {{"name", name}, {"command", command}, {"ok", r.ok}, {"seconds", r.seconds},
            {"queued_seconds", r.queued_seconds}, {"output", tail(r.output, 4000)}};
  if (!r.problem.empty()) s["problem"] = r.problem;
  if (!ro.empty()) s["pch"] = pch_verdict(r.output);
  std::lock_guard<std::mutex> lock(mutex_);
  record["steps"].push_back(s);
  return r;
}

std::future<StepResult> ModuleSteps::later(const std::string& name, const std::string& command, std::size_t mb,
                                           const fs::path& ro) {
  return std::async(std::launch::async, [=, this] { return run(name, command, mb, ro); });
}

bool ModuleSteps::decide(const StepResult& r) {
  if (r.ok) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (error.empty()) error = r.problem + "\n" + tail(r.output, 12000);
  deterministic = deterministic && r.deterministic;
  return false;
}

bool ModuleSteps::link(const std::vector<std::string>& objects) { return decide(run("link", torch_.link(objects, nf_), kLinkMb)); }

}  // namespace cudal1

#include "build/python_side.h"

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

namespace {

std::chrono::milliseconds ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

bool strings(const json& v) {
  if (!v.is_array()) return false;
  for (auto& s : v)
    if (!s.is_string()) return false;
  return true;
}

bool identifier(const std::string& s) {
  if (s.empty() || s.size() > 200 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string failure_text(const json& f) {
  std::string where = f.value("file", std::string());
  if (f.contains("line") && f["line"].is_number()) where += ":" + std::to_string(f["line"].get<int>());
  return (where.empty() ? "" : where + ": ") + f.value("message", std::string("the module did not import"));
}

}  // namespace

std::string spec_problem(const json& spec) {
  static const std::set<std::string> lists = {"cpp_sources", "cuda_sources", "extra_cflags", "extra_cuda_cflags",
                                              "extra_ldflags", "extra_include_paths"};
  static const std::set<std::string> flags = {"with_cuda", "with_pytorch_error_handling", "no_implicit_headers"};
  if (!spec.is_object()) return "not an object";
  for (auto& [k, v] : spec.items()) {
    if (k == "name") {
      if (!v.is_string() || !identifier(v.get<std::string>())) return "the name is not an identifier";
    } else if (lists.count(k)) {
      if (!strings(v)) return k + " is not a list of strings";
    } else if (flags.count(k)) {
      if (!v.is_boolean()) return k + " is not a boolean";
    } else if (k == "functions") {
      if (v.is_null()) continue;
      if (!v.is_array()) return "functions is not a list";
      for (auto& f : v)
        if (!strings(f) || f.size() != 2) return "functions holds something other than [name, doc] pairs";
    } else {
      return "unknown field " + k;
    }
  }
  for (auto k : {"name", "cpp_sources", "cuda_sources", "functions", "with_cuda"})
    if (!spec.contains(k)) return std::string("no field ") + k;
  return "";
}

Capture capture_builds(const CaptureOptions& o) {
  Capture cap;
  fs::path dir = make_private_dir("cudal1-capture");
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  WorkerSpec ws{WorkerRole::candidate, o.python, dir.string(), "cpu", (dir / "torch_extensions").string(), {}};
  ws.limits.output_bytes = 32u << 20;  // the reply carries every source the module passed
  ws.limits.memory_bytes = o.memory_mb << 20;
  ws.limits.limit_address_space = true;
  ws.limits.drop_privileges = true;
  for (auto& d : o.hide_dirs)
    if (fs::exists(d)) ws.limits.hide_dirs.push_back({d, "", ""});
  for (auto& f : o.hide_files)
    if (fs::exists(f)) ws.limits.hide_files.push_back(f);
  ws.sandbox = SandboxPolicy{.readable = {fs::absolute(o.candidate).string()}, .hidden = o.hide_dirs};
  if (!o.task.empty()) ws.sandbox->readable.push_back(fs::absolute(o.task).string());
  for (auto& f : o.hide_files) ws.sandbox->hidden.push_back(f);
  Worker w(ws);
  json req = {{"op", "capture_builds"}, {"candidate", fs::absolute(o.candidate).string()},
              {"target", o.target.rfind("cuda", 0) == 0 ? "cuda" : "cpu"}};
  if (!o.task.empty()) req["task"] = fs::absolute(o.task).string();
  WorkerReply r = w.request(req, ms(o.timeout_s));
  std::string err = w.stderr_tail(2000);
  w.shutdown();
  if (r.kind != WorkerReply::Kind::ok) {
    cap.message = "recording the candidate's builds failed: " + r.detail + (err.empty() ? "" : "\n" + err);
    return cap;
  }
  const json& b = r.body;
  if (!b.value("ok", false) || !b.contains("calls") || !b["calls"].is_array() || !b.contains("imported") ||
      !b["imported"].is_boolean()) {
    cap.message = "recording the candidate's builds failed: " + b.value("message", std::string("a malformed reply"));
    return cap;
  }
  for (auto& c : b["calls"]) {
    CapturedCall call;
    if (!c.is_object()) return cap.message = "the capture reply holds a malformed call", cap;
    if (c.contains("unsupported")) {
      call.name = c.value("name", std::string("?"));
      call.unsupported = c["unsupported"].is_string() ? c["unsupported"].get<std::string>() : "unsupported";
    } else {
      if (!c.contains("spec") || !c["spec_id"].is_string() || !c["module"].is_string())
        return cap.message = "the capture reply holds a malformed call", cap;
      call.spec = c["spec"];
      std::string why = spec_problem(call.spec);
      call.spec_id = c["spec_id"].get<std::string>();
      call.module = c["module"].get<std::string>();
      call.content_id = c.value("content_id", std::string());
      if (!call.content_id.empty() && !hex64(call.content_id))
        return cap.message = "the capture reply holds a malformed content id", cap;
      if (!why.empty() || !hex64(call.spec_id) || !identifier(call.module))
        return cap.message = "the capture reply holds a malformed spec" + (why.empty() ? "" : ": " + why), cap;
      call.name = call.spec["name"].get<std::string>();
    }
    cap.calls.push_back(std::move(call));
  }
  if (b["imported"].get<bool>()) {
    cap.result = Capture::Result::imported;
  } else {
    cap.result = Capture::Result::import_failed;
    cap.message = b.contains("failure") && b["failure"].is_object() ? failure_text(b["failure"]) : "the module did not import";
  }
  return cap;
}

Preparer::Preparer(std::string python, std::vector<std::string> hide_dirs)
    : python_(std::move(python)), hide_(std::move(hide_dirs)), dir_(make_private_dir("cudal1-prepare")) {}

Preparer::~Preparer() {
  if (worker_) worker_->shutdown();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void Preparer::ensure_worker() {
  if (worker_) return;
  // Trusted code, but it reads the candidate's strings: it runs unprivileged, caches hidden.
  WorkerSpec ws{WorkerRole::reference, python_, dir_.string(), "cpu", {}, {}};
  ws.limits.output_bytes = 64u << 20;
  ws.limits.drop_privileges = true;
  for (auto& d : hide_)
    if (fs::exists(d)) ws.limits.hide_dirs.push_back({d, "", ""});
  ws.sandbox = SandboxPolicy{.hidden = hide_};
  worker_ = std::make_unique<Worker>(ws);
}

void Preparer::warm() {
  std::lock_guard<std::mutex> lock(mutex_);
  ensure_worker();
}

json Preparer::call(const json& req, double timeout_s) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    ensure_worker();
    WorkerReply r = worker_->request(req, ms(timeout_s));
    if (r.kind == WorkerReply::Kind::ok) {
      if (r.body.value("ok", false)) return r.body;
      throw Error(ErrorKind::runner, "torch could not prepare the build: " + r.body.value("type", std::string()) + ": " +
                                         r.body.value("message", std::string()),
                  "the candidate's own process builds this extension instead");
    }
    std::string err = worker_->stderr_tail(1500);
    worker_->shutdown();
    worker_.reset();
    if (attempt == 1)
      throw Error(ErrorKind::runner, "the build preparation worker failed: " + r.detail,
                  "check that " + python_ + " imports torch", "stderr: " + err);
  }
  return {};
}

Prepared Preparer::prepare(const json& spec, const std::string& module, const std::string& arch_list) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Made by the worker, which runs as its sandbox's uid: a folder made here would not be its.
  fs::path out = dir_ / ("prep-" + std::to_string(requests_++));
  json rep;
  try {
    rep = call({{"op", "prepare_build"}, {"spec", spec}, {"module", module}, {"arch_list", arch_list}, {"out_dir", out.string()}}, 120);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(out, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(out, ec);
  Prepared p;
  p.spec_id = rep.value("spec_id", std::string());
  p.module = rep.value("module", module);
  if (!rep.contains("files") || !rep["files"].is_object())
    throw Error(ErrorKind::runner, "the build preparation worker sent no files");
  for (auto& [name, text] : rep["files"].items())
    if (text.is_string()) p.files[name] = text.get<std::string>();
  if (!p.files.count("build.ninja") || !p.files.count("main.cpp"))
    throw Error(ErrorKind::runner, "torch wrote no build.ninja or main.cpp for " + module);
  return p;
}

json Preparer::environment() {
  std::lock_guard<std::mutex> lock(mutex_);
  return call({{"op", "env"}}, 120).value("env", json::object());
}

std::string Preparer::cuda_arch() {
  std::lock_guard<std::mutex> lock(mutex_);
  return call({{"op", "cuda_arch"}}, 120).value("arch", std::string());
}

}  // namespace cudal1

#include "build/module_build.h"

#include <sys/stat.h>

#include <ctime>
#include <fstream>

#include "build/module_steps.h"
#include "build/ninja_file.h"
#include "core/hash.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace cudal1 {

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool regular_file(const fs::path& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

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
    ModuleSteps b(ctx, req, deadline, job);
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

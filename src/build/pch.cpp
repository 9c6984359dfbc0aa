#include "build/pch.h"

#include <cctype>
#include <chrono>
#include <fstream>

#include "build/shell.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace cudal1 {

std::vector<std::string> pch_flags(const std::vector<std::string>& tu_flags) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < tu_flags.size(); ++i) {
    const std::string& w = tu_flags[i];
    if (w.rfind("-DTORCH_EXTENSION_NAME=", 0) == 0 || w == "-MMD" || w == "-MD") continue;
    if (w == "-MF") {
      ++i;
      continue;
    }
    out.push_back(w);
  }
  return out;
}

namespace {
std::string identifier(const std::string& header) {
  std::string id;
  for (char c : header) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return id;
}
}  // namespace

PchCache::PchCache(const CacheLayout& layout, JobPool& pool) : layout_(layout), pool_(pool) {}

PchCache::~PchCache() { wait(); }

void PchCache::wait() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

fs::path pch_file(const fs::path& dir, const PchRequest& req) { return dir / (req.header + (req.clang ? ".pch" : ".gch")); }

std::string PchCache::key_of(const PchRequest& req) const {
  nlohmann::json parts = {{"what", "pch"}, {"format", 2}, {"toolchain", req.toolchain}, {"header", req.header},
                          {"cxx", req.cxx}, {"flags", pch_flags(req.flags)}};
  if (req.clang) parts["kind"] = "clang";
  return cache_key(parts);
}

std::string PchCache::failure(const PchRequest& req) {
  std::string key = key_of(req);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = failed_.find(key);
  return it == failed_.end() ? "" : it->second;
}

fs::path PchCache::find_or_wait(const PchRequest& req, Clock::time_point deadline) {
  fs::path dir = find_or_start(req);
  if (!dir.empty()) return dir;
  std::string key = key_of(req);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ended_.wait_until(lock, deadline, [&] { return building_.count(key) == 0; });
  }
  std::error_code ec;
  return fs::exists(pch_file(layout_.pch(key), req), ec) ? layout_.pch(key) : fs::path();
}

fs::path PchCache::find_or_start(const PchRequest& req) {
  std::string key = key_of(req);
  fs::path dir = layout_.pch(key);
  std::error_code ec;
  if (fs::exists(pch_file(dir, req), ec)) return dir;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_.count(key) && building_.insert(key).second) threads_.emplace_back(&PchCache::build, this, req, key);
  return {};
}

void PchCache::build(PchRequest req, std::string key) {
  auto done = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    building_.erase(key);
    ended_.notify_all();
  };
  try {
    KeyLock lock(layout_.lock(key));  // another process building it: leave it to them
    std::error_code ec;
    if (!lock.held() || fs::exists(layout_.pch(key), ec)) return done();
    fs::path job = layout_.new_job();
    fs::path out = job / "out";
    fs::create_directories(out / fs::path(req.header).parent_path());
    std::vector<std::string> words = req.cxx;
    for (auto& f : pch_flags(req.flags)) words.push_back(f);
    std::string command;
    if (req.clang) {
      // From stdin: clang records the header's source file by path and refuses the .pch once
      // that file is gone, and the job folder is.
      for (auto w : {"-fpch-instantiate-templates", "-x", "c++-header", "-", "-o"}) words.push_back(w);
      words.push_back(pch_file("out", req).string());
      command = "printf '#include <%s>\\n' " + shell_quote(req.header) + " | " + shell_join(words);
    } else {
      // Beside the .gch, a stand-in for the header: g++ takes the folder that holds the .gch for
      // the header's own, so a TU's second #include of it (torch writes one at the top of
      // main.cpp, the candidate's source has its own) opens this file, which the guard the
      // precompiled state defines leaves empty. When g++ rejects the .gch it reads the real header.
      std::string guard = "CUDAL1_PCH_" + identifier(req.header);
      std::ofstream(job / "pch_source.h") << "#define " << guard << "\n#include <" << req.header << ">\n";
      std::ofstream(out / req.header) << "#ifndef " << guard << "\n#define " << guard << "\n#include_next <"
                                      << req.header << ">\n#endif\n";
      for (auto w : {"-x", "c++-header", "pch_source.h", "-o"}) words.push_back(w);
      words.push_back(pch_file("out", req).string());
      command = shell_join(words);
    }
    Step step{"precompiled " + req.header, command, job, {}, 2500};
    StepResult r = pool_.run(step, Clock::now() + std::chrono::minutes(30));
    if (!r.ok && r.deterministic) {
      std::lock_guard<std::mutex> guard(mutex_);
      failed_[key] = r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output;
    }
    if (r.ok) {
      nlohmann::json meta = {{"key", key}, {"header", req.header}, {"command", step.command},
                             {"seconds", r.seconds}, {"toolchain", req.toolchain}};
      std::ofstream(out / "pch.json") << meta.dump(2) << "\n";
      publish(out, layout_.pch(key));
    }
    fs::remove_all(job, ec);
  } catch (...) {
    // A header that cannot be built only means builds go without it.
  }
  done();
}

}  // namespace cudal1

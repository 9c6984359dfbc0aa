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

fs::path PchCache::find_or_start(const PchRequest& req) {
  nlohmann::json parts = {{"what", "pch"}, {"format", 2}, {"toolchain", req.toolchain}, {"header", req.header},
                          {"cxx", req.cxx}, {"flags", pch_flags(req.flags)}};
  std::string key = cache_key(parts);
  fs::path dir = layout_.pch(key);
  std::error_code ec;
  if (fs::exists(dir / (req.header + ".gch"), ec)) return dir;
  std::lock_guard<std::mutex> lock(mutex_);
  if (building_.insert(key).second) threads_.emplace_back(&PchCache::build, this, req, key);
  return {};
}

void PchCache::build(PchRequest req, std::string key) {
  auto done = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    building_.erase(key);
  };
  try {
    KeyLock lock(layout_.lock(key));  // another process building it: leave it to them
    std::error_code ec;
    if (!lock.held() || fs::exists(layout_.pch(key), ec)) return done();
    fs::path job = layout_.new_job();
    fs::path out = job / "out";
    fs::create_directories(out / fs::path(req.header).parent_path());
    // Beside the .gch, a stand-in for the header: g++ takes the folder that holds the .gch for
    // the header's own, so a TU's second #include of it (torch writes one at the top of
    // main.cpp, the candidate's source has its own) opens this file, which the guard the
    // precompiled state defines leaves empty. When g++ rejects the .gch it reads the real header.
    std::string guard = "CUDAL1_PCH_" + identifier(req.header);
    std::ofstream(job / "pch_source.h") << "#define " << guard << "\n#include <" << req.header << ">\n";
    std::ofstream(out / req.header) << "#ifndef " << guard << "\n#define " << guard << "\n#include_next <"
                                    << req.header << ">\n#endif\n";
    std::vector<std::string> words = req.cxx;
    for (auto& f : pch_flags(req.flags)) words.push_back(f);
    for (auto w : {"-x", "c++-header", "pch_source.h", "-o"}) words.push_back(w);
    words.push_back("out/" + req.header + ".gch");
    Step step{"precompiled " + req.header, shell_join(words), job, {}, 2500};
    StepResult r = pool_.run(step, Clock::now() + std::chrono::minutes(30));
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

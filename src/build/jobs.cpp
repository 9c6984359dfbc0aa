#include "build/jobs.h"

#include <fstream>
#include <sstream>
#include <thread>

#include "core/paths.h"
#include "runner/process.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace cudal1 {

namespace {

constexpr std::size_t kOutputLimit = 8u << 20;  // a compiler saying more than this is stopped

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

// Removes the staging folders the sandbox mounts through, whatever happens.
struct Stage {
  fs::path dir = make_private_dir("cudal1-stage");
  Stage() {
    fs::create_directories(dir / "rw");
    fs::create_directories(dir / "ro");
  }
  ~Stage() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

std::size_t available_memory_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb / 1024;
  return 0;
}

JobPool::JobPool(fs::path cache_root, int jobs, std::size_t memory_budget_mb)
    : root_(std::move(cache_root)),
      jobs_(jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
      budget_mb_(memory_budget_mb > 0 ? memory_budget_mb : std::max<std::size_t>(1024, available_memory_mb() * 8 / 10)) {}

StepResult JobPool::run(const Step& step, Clock::time_point deadline) {
  auto asked = Clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    bool room = freed_.wait_until(lock, deadline, [&] {
      return running_ == 0 || (running_ < jobs_ && used_mb_ + step.memory_mb <= budget_mb_);
    });
    if (!room) {
      StepResult r;
      r.deterministic = false;
      r.problem = step.name + ": no build slot came free before the deadline";
      r.queued_seconds = since(asked);
      return r;
    }
    ++running_;
    used_mb_ += step.memory_mb;
  }
  double queued = since(asked);
  StepResult r;
  try {
    r = execute(step, deadline);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    used_mb_ -= step.memory_mb;
    freed_.notify_all();
    throw;
  }
  r.queued_seconds = queued;
  std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  used_mb_ -= step.memory_mb;
  freed_.notify_all();
  return r;
}

StepResult JobPool::execute(const Step& step, Clock::time_point deadline) {
  StepResult r;
  Stage stage;
  ProcessSpec ps;
  ps.argv = {"/bin/sh", "-c", step.command};
  ps.cwd = step.cwd.string();
  ps.env["HOME"] = ps.cwd;
  ps.env["TMPDIR"] = ps.cwd;  // nvcc's intermediate files stay in the job folder
  ps.env_allow_prefixes = {"PATH", "LANG", "LC_", "TZ", "LD_LIBRARY_PATH", "CUDA_", "NVIDIA_", "CC", "CXX",
                           "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "NVCC_"};
  ps.limits.output_bytes = kOutputLimit;
  ps.limits.drop_privileges = true;
  ps.limits.nice = 10;  // builds run beside timed evaluations: the timed processes go first
  HiddenDir hide{root_.string(), fs::relative(step.cwd, root_).string(), (stage.dir / "rw").string(), "", ""};
  if (!step.read_only.empty()) {
    hide.keep_read_only = fs::relative(step.read_only, root_).string();
    hide.stage_read_only = (stage.dir / "ro").string();
  }
  ps.limits.hide_dirs = {hide};
  auto start = Clock::now();
  Process p(ps);
  std::string line;
  WaitOutcome w;
  do {  // lines on the protocol pipe mean nothing from a compiler: keep waiting for its exit
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    w = p.read_line(std::max(left, std::chrono::milliseconds(0)), line);
  } while (w == WaitOutcome::line);
  r.seconds = since(start);
  r.output = tail(p.stdout_tail() + p.stderr_tail(), 16000);
  if (w == WaitOutcome::exited) {
    auto info = p.exit_info();
    r.ok = info && info->exited && info->exit_code == 0;
    if (!r.ok) {
      r.problem = step.name + ": the command " + (info ? info->describe() : std::string("went away"));
      r.deterministic = info && info->exited;  // a signal may be ours or the machine's, not the source's
    }
    return r;
  }
  p.kill_all();
  // A flood comes from the source every time; a deadline or the memory watch may not.
  r.deterministic = w == WaitOutcome::output_flood;
  if (w == WaitOutcome::timeout) r.problem = step.name + ": killed at the build deadline";
  else if (w == WaitOutcome::output_flood) r.problem = step.name + ": killed after writing more than 8 MiB of output";
  else r.problem = step.name + ": killed (memory)";
  return r;
}

}  // namespace cudal1

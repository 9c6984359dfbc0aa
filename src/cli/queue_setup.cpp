#include "cli/queue_setup.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace cudal1::cli {

namespace {

// The GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else what nvidia-smi lists.
int visible_gpus() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v)
    return int(std::count(v, v + std::strlen(v), ',')) + 1;
  int n = 0;
  if (FILE* p = popen("nvidia-smi -L 2>/dev/null", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, p)) n += std::strncmp(line, "GPU ", 4) == 0;
    pclose(p);
  }
  return n;
}

}  // namespace

std::vector<std::string> lane_devices(const std::string& device, int gpus, int lanes, bool one_gpu) {
  if (device == "cpu") return std::vector<std::string>(std::size_t(std::max(1, lanes)), "cpu");
  if (device != "cuda") return std::vector<std::string>(std::size_t(std::max(1, lanes)), device);  // one named GPU
  int n = visible_gpus();
  if (n == 0) throw Error(ErrorKind::usage, "--device cuda, but no GPU is visible", "run on a machine with a GPU, or use --device cpu");
  if (gpus > 0) n = std::min(n, gpus);
  if (one_gpu) n = 1;
  std::vector<std::string> d;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < std::max(1, lanes); ++k) d.push_back("cuda:" + std::to_string(i));
  return d;
}

void add_eval_memory_option(CLI::App& cmd, double& gb) {
  cmd.add_option("--eval-memory-gb", gb, "host memory the lanes' evaluations may hold at once, in GB (0: three quarters of what is available)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void add_finish_within_option(CLI::App& cmd, double& seconds) {
  cmd.add_option("--finish-within", seconds,
                 "end the evaluations within this many seconds of their start: none starts that the run times so far "
                 "say would end later (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

uint64_t eval_memory_bytes(double gb) { return uint64_t(gb * double(1ull << 30)); }

std::unique_ptr<BuildService> attach_build_service(QueueConfig& config, const BuildServiceFlags& flags) {
  BuildConfig bc;
  bc.cache_root = flags.cache;
  bc.jobs = flags.jobs;
  bc.clang = flags.clang;
  auto service = std::make_unique<BuildService>(bc);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  config.prebuild_threads = flags.prebuild_threads > 0 ? flags.prebuild_threads : int(std::clamp(cores / 2, 1u, 8u));
  BuildService* svc = service.get();
  config.prebuild = [svc](const QueueJob& j) {
    return std::make_shared<const BuildOutcome>(
        svc->build_candidate(j.options.candidate_path, j.options.device, j.options.build_timeout_s, j.options.task_path));
  };
  return service;
}

StopOnSignal::StopOnSignal(std::string command) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Detached: it lives as long as the process, waiting; the flag is shared with it.
  std::thread([signals, flag = flag_, command = std::move(command)] {
    int sig = 0;
    sigwait(&signals, &sig);
    *flag = true;
    std::fprintf(stderr, "\n%s: stopping: the evaluations in hand finish and are kept, no other starts "
                 "(again to stop at once)\n", command.c_str());
    sigwait(&signals, &sig);
    std::fprintf(stderr, "%s: stopped at once\n", command.c_str());
    std::_Exit(128 + sig);
  }).detach();
}

ProgressLine::ProgressLine(std::size_t total, std::size_t already_done)
    : total_(total), done_(already_done), base_(already_done), start_(std::chrono::steady_clock::now()) {}

void ProgressLine::tick() {
  ++done_;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = double(done_ - base_) / std::max(1e-9, s);
  std::fprintf(stderr, "\r[%zu/%zu] %.0f evaluations/hour, ETA %.0f s   ", done_, total_, 3600.0 * rate,
               double(total_ - done_) / std::max(1e-9, rate));
}

void ProgressLine::finish() { std::fprintf(stderr, "\n"); }

}  // namespace cudal1::cli

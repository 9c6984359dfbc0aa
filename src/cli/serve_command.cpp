// cli/serve: `cudal1 serve` — the reward service for external RL trainers (service/service.h,
// docs/serve.md). Built with the HTTP library (not in the static build for the GPU machine).
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "cli/baseline_options.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/judge_options.h"
#include "cli/queue_setup.h"
#include "cli/redis_options.h"
#include "core/error.h"
#include "service/service.h"
#include "task_facts/store_task_facts.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace cudal1::cli {

namespace {

struct ServeArgs {
  std::string host = "127.0.0.1", token_file, db, jobs, work, device = "auto", suite;
  bool token_flag = false;  // the old --token was given: refused, it shows the token to every local user
  int port = 8080, lanes = 2, gpus = 0, max_per_address = 16;
  double max_body_mb = 8, reward_timeout_s = 3600, header_timeout_s = 5;
  int64_t max_queue = 1000;
  bool no_auth = false, no_timing = false;
  BaselineArgs baselines;
  RedisArgs redis;
  JudgeArgs judge;
};

// The token from --token-file, else $CUDAL1_SERVE_TOKEN; never from the command line, which every
// local process can read (/proc/PID/cmdline). The variable is removed once read, so that nothing
// the service starts inherits it.
std::string service_token(const ServeArgs& a) {
  if (a.token_flag)
    throw Error(ErrorKind::usage, "--token is not taken: a command line can be read by every process on the machine",
                "set CUDAL1_SERVE_TOKEN in the service's environment, or pass --token-file FILE (a file only you "
                "can read: chmod 600 FILE)");
  const char* env = std::getenv("CUDAL1_SERVE_TOKEN");
  std::string token = env ? env : "";
  ::unsetenv("CUDAL1_SERVE_TOKEN");
  if (a.token_file.empty()) return token;
  const std::string& file = a.token_file;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Error(ErrorKind::input, "cannot read --token-file " + file + ": " + why, "check the path and its permissions");
  }
  if (st.st_mode & 077) {
    ::close(fd);
    throw Error(ErrorKind::usage, "--token-file " + file + " can be read or changed by other users",
                "chmod 600 " + file + " (and keep it in a folder only you can write), then start the service again");
  }
  token.clear();
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) token.append(buf, std::size_t(n));
  ::close(fd);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty())
    throw Error(ErrorKind::usage, "--token-file " + file + " holds no token", "write the token into it, on one line");
  return token;
}

void run_serve(const ServeArgs& a) {
  const std::string token = service_token(a);
  // SIGINT and SIGTERM go to one thread that waits for them (blocked everywhere else, before any
  // thread starts): stopping takes locks, which a signal handler must not.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::string device = a.device;
  if (device == "auto" && a.redis.enabled()) device = "cuda";  // the workers' GPUs
  if (device == "auto") {
    try {
      lane_devices("cuda", a.gpus, a.lanes, false);
      device = "cuda";
    } catch (const Error&) {
      device = "cpu";
    }
  }
  std::unique_ptr<Store> store = open_store(a.db, false);
  service::ServiceConfig c;
  c.host = a.host;
  c.port = a.port;
  c.no_auth = a.no_auth;
  c.max_pending = a.max_queue;
  c.token = token;
  c.max_connections_per_address = a.max_per_address;
  c.header_timeout_s = a.header_timeout_s;
  c.max_body_bytes = std::size_t(a.max_body_mb * double(1 << 20));
  c.reward_timeout_s = a.reward_timeout_s;
  c.jobs_path = a.jobs.empty() ? fs::path(store->path().string() + ".jobs") : fs::path(a.jobs);
  c.work_dir = a.work.empty() ? c.jobs_path.parent_path() / "serve-files" : fs::path(a.work);
  c.suite = a.suite.empty() ? default_suite_dir() : fs::path(a.suite);
  c.eval.device = device;
  c.eval.timing = !a.no_timing;
  apply_baseline_args(a.baselines, c.eval);
  c.eval.task_facts = store_task_facts(store.get());
  c.judge = judge_config(a.judge);
  // Out of every sandbox's sight (sandbox/sandbox.h): the store's and the jobs file's folders
  // with their keys, the clients' files (a job's own files are put back, read-only), the token.
  c.eval.protect_files = store->private_files();
  for (auto& f : service::JobStore::private_files(c.jobs_path)) c.eval.protect_files.push_back(f);
  c.eval.hidden_paths.push_back(c.work_dir.string());
  if (!a.token_file.empty()) c.eval.hidden_paths.push_back(fs::absolute(a.token_file).string());
  std::unique_ptr<BuildService> builds;
  if (use_cluster(a.redis, c.queue)) {
    c.cluster = a.redis.endpoint();
    c.cluster_keys = a.redis.keys();
    c.cluster_max_queued = a.redis.max_queued;
  } else {
    c.queue.devices = lane_devices(device, a.gpus, a.lanes, false);
    builds = attach_build_service(c.queue, {});
  }
  service::RewardService svc(c, *store);
  const int port = svc.bind();
  service::JobCounts counts = svc.jobs().counts();
  const std::string shown_host = a.host.find(':') == std::string::npos ? a.host : "[" + a.host + "]";
  std::cerr << "cudal1 serve: listening on http://" << shown_host << ":" << port << " (" << c.queue.devices.size() << " lanes on "
            << device << (c.no_auth ? ", no auth" : ", bearer token required") << "); jobs in " << c.jobs_path.string()
            << " (" << counts.queued << " queued";
  if (svc.jobs().requeued_at_start()) std::cerr << ", " << svc.jobs().requeued_at_start() << " of them interrupted before and run again";
  std::cerr << "), verdicts in " << store->path().string() << std::endl;
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    // The lanes finish the evaluation they are in; unfinished jobs stay in the job file and run
    // at the next start. Repeated: a stop before the server listens would be lost.
    while (!finished) {
      svc.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto end_stopper = [&] {
    finished = true;
    pthread_kill(stopper.native_handle(), SIGTERM);  // wakes the waiter when no signal came
    stopper.join();
  };
  try {
    svc.run();
  } catch (...) {
    end_stopper();  // a joinable thread left behind would end the process without the error
    throw;
  }
  end_stopper();
  std::cerr << "cudal1 serve: stopped; unfinished jobs run at the next start" << std::endl;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "The reward service for RL trainers over HTTP: KernelGYM-style jobs, "
                                              "OpenRLHF's remote reward, health and Prometheus metrics (docs/serve.md)");
  cmd->add_option("--host", a->host, "address to listen on (loopback unless told otherwise)")->capture_default_str();
  cmd->add_option("--port", a->port, "port (0: any free one)")->capture_default_str();
  cmd->add_option("--token-file", a->token_file,
                  "a file (chmod 600) holding the bearer token clients send; else $CUDAL1_SERVE_TOKEN");
  // Hidden, and only there to say what to use instead.
  cmd->add_option("--token")->expected(0, 1)->group("");
  cmd->add_flag("--no-auth", a->no_auth, "no token (only on a --host that resolves to loopback alone)");
  cmd->add_option("--db", a->db, std::string("SQLite store of verdicts (") + kDefaultStoreHelp + ")");
  cmd->add_option("--jobs", a->jobs, "the job file (default: the store's path + .jobs)");
  cmd->add_option("--work", a->work, "where jobs' task and candidate files go (default: serve-files beside the job file)");
  cmd->add_option("--suite", a->suite, "the task suite task_id names (default: the bundled one)");
  cmd->add_option("-d,--device", a->device, "auto (CUDA when a GPU is visible), cuda, cuda:N or cpu")->transform(device_names(true))->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "use at most this many GPUs (0: all)");
  cmd->add_option("--lanes", a->lanes, "evaluations side by side on each device")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-queue", a->max_queue, "jobs queued or running at most; more get 429")->check(CLI::PositiveNumber)->capture_default_str();
  add_redis_options(cmd, a->redis);
  add_judge_options(cmd, a->judge);
  cmd->add_option("--max-body-mb", a->max_body_mb, "request bodies larger than this get 413")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--reward-timeout", a->reward_timeout_s, "seconds POST /reward waits for its evaluations")->capture_default_str();
  cmd->add_option("--max-connections-per-address", a->max_per_address,
                  "connections one client address may hold at once; more get 429")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--header-timeout", a->header_timeout_s,
                  "seconds a connection has to send its request line and headers, in total; then it is closed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--no-timing", a->no_timing, "check correctness only (rewards are then 0 or the penalty)");
  add_baseline_options(cmd, a->baselines);
  cmd->callback([a, cmd] {
    a->token_flag = cmd->count("--token") > 0;
    run_serve(*a);
  });
}

}  // namespace cudal1::cli

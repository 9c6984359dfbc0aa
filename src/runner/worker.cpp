#include "runner/worker.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/format.h"
#include "core/text.h"
#include "runner/cpu_wait.h"
#include "core/paths.h"

namespace cudal1 {

Worker::Worker(const WorkerSpec& spec)
    : role_name_(spec.role == WorkerRole::reference ? "reference" : "candidate"), workdir_(spec.workdir) {
  ProcessSpec ps;
  auto script = python_worker_dir() / "cudal1_worker.py";
  // -s: no per-user site folder. HOME is the worker's own folder, which a candidate writes and a
  // later process of it (the re-timing one) shares: a .pth file planted there would run at that
  // interpreter's start, before the worker made anything it relies on.
  ps.argv = {spec.python, "-B", "-s", script.string(), role_name_, "--device", spec.device};
  ps.cwd = spec.workdir;
  ps.limits = spec.limits;
  ps.env = spec.env;
  ps.env["PYTHONUNBUFFERED"] = "1";
  ps.env["PYTHONDONTWRITEBYTECODE"] = "1";
  ps.env["HOME"] = spec.workdir;  // nothing of the user's home leaks in or gets written
  ps.env["TMPDIR"] = spec.workdir;
  ps.env["TORCH_EXTENSIONS_DIR"] =
      spec.extensions_dir.empty() ? spec.workdir + "/torch_extensions" : spec.extensions_dir;
  // glibc fills fresh allocations with 0xFE bytes: output elements the candidate never writes
  // then hold a huge value, not a lucky zero or a stale result. Both roles pay the same fill
  // cost, so host timings stay comparable.
  ps.env["MALLOC_PERTURB_"] = "1";
  // Fixed glibc heap settings for both roles: otherwise each process's allocation history moves
  // its mmap threshold, and one side pays a page fault per output page on every call while the
  // other reuses its heap (measured: the same module timed 0.4x against itself).
  ps.env["MALLOC_MMAP_THRESHOLD_"] = "33554432";
  ps.env["MALLOC_TRIM_THRESHOLD_"] = "1073741824";
  ps.env["MALLOC_TOP_PAD_"] = "67108864";
  // What Python, PyTorch, compilers and CUDA need; nothing else of the user's environment (the
  // candidate is hostile: no tokens or keys). The reference gets the same list: a variable that
  // reached only one side (PYTHONMALLOC, PYTHONDEVMODE, a thread setting) would time the two
  // sides of an A/A comparison differently.
  // USER and LOGNAME: torch.compile names its cache folder after getpass.getuser(), which fails
  // for a uid without a passwd entry (a container) when they are unset.
  ps.env_allow_prefixes = {"PATH", "LANG", "LC_", "TZ", "TERM", "USER", "LOGNAME", "PYTHONPATH",
                           "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CUDA_", "NVIDIA_", "TORCH_CUDA_ARCH_LIST",
                           "TORCHINDUCTOR_", "TRITON_", "PYTORCH_", "CUDNN_", "CUBLAS_", "MAX_JOBS",
                           "CC", "CXX", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "NCCL_",
                           "TORCH_SYMM_MEM_", "NVSHMEM_", "HIP_", "ROCR_", "HSA_"};
  if (spec.sandbox) {
    SandboxPolicy sp = *spec.sandbox;
    if (sp.scratch.empty()) sp.scratch = spec.workdir;
    for (auto& p : python_paths(spec.python)) sp.readable.push_back(p);
    sp.readable.push_back(python_worker_dir().string());
    if (!spec.extensions_dir.empty() && spec.extensions_dir.rfind(spec.workdir, 0) != 0)
      sp.writable.push_back(spec.extensions_dir);
    sp.gpu = spec.device.rfind("cuda", 0) == 0;
    ps.sandbox = std::move(sp);
    // The sandbox's uid has no passwd entry, and Python's getpass.getuser() (torch.compile's and
    // the profiler's cache folders are named after it) falls back to one when these are unset.
    ps.env["USER"] = ps.env["LOGNAME"] = "cudal1-sandbox";
  }
  process_ = std::make_unique<Process>(ps);
  join(DeviceGate::Member::current());
  std::random_device rd;
  for (int i = 0; i < 4; ++i) nonce_ += std::to_string(rd());
  process_->send_line(nonce_);
}

WorkerReply Worker::request(const json& req, std::chrono::milliseconds timeout) {
  return request(req, timeout, nullptr);
}

WorkerReply Worker::request(const json& req, std::chrono::milliseconds slice, const KeepWaiting& keep_waiting) {
  WorkerReply reply{WorkerReply::Kind::ok, {}, 0, 0, {}};
  auto delay_before = run_queue_delay_ms(process_->main_pid());
  auto own_delay_before = this_thread_run_queue_delay_ms();
  auto start = std::chrono::steady_clock::now();
  auto frozen_at_start = member_ ? member_->frozen_for() : std::chrono::nanoseconds(0);
  auto waited = [&] {
    auto frozen = member_ ? member_->frozen_for() - frozen_at_start : std::chrono::nanoseconds(0);
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start - frozen);
  };
  std::string line;
  WaitOutcome outcome = WaitOutcome::exited;
  if (process_->send_line(req.dump())) {
    outcome = process_->read_line(slice, line);
    while (outcome == WaitOutcome::timeout && keep_waiting && keep_waiting(waited()))
      outcome = process_->read_line(slice, line);
  } else {
    process_->kill_all();
  }
  reply.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  auto delay_after = run_queue_delay_ms(process_->main_pid());
  auto own_delay_after = this_thread_run_queue_delay_ms();
  if (delay_before && delay_after) reply.stalled_ms = std::max(0.0, *delay_after - *delay_before);
  if (own_delay_before && own_delay_after) reply.stalled_ms += std::max(0.0, *own_delay_after - *own_delay_before);
  reply.stalled_ms = std::min(reply.stalled_ms, reply.wall_ms);

  auto op = req.value("op", std::string("?"));
  switch (outcome) {
    case WaitOutcome::line:
      try {
        reply.body = json::parse(line);
        if (!reply.body.is_object()) throw std::runtime_error("not an object");
        if (reply.body.value("nonce", "") != nonce_) {
          process_->kill_all();
          reply.kind = WorkerReply::Kind::protocol_error;
          reply.detail = "a reply to '" + op + "' did not come from the " + role_name_ +
                         " worker's protocol code (wrong or missing session nonce): " + line.substr(0, 200);
          break;
        }
        reply.body.erase("nonce");
      } catch (const std::exception&) {
        reply.kind = WorkerReply::Kind::protocol_error;
        reply.detail = "the " + role_name_ + " worker answered '" + op +
                       "' with something that is not a JSON object: " + line.substr(0, 200);
      }
      break;
    case WaitOutcome::timeout:
      reply.detail = "no answer to '" + op + "' within " + format_fixed(double(waited().count()) / 1000.0, 1) +
                     " s; killed";
      process_->kill_all();
      reply.kind = WorkerReply::Kind::timeout;
      break;
    case WaitOutcome::exited: {
      auto info = process_->exit_info();
      reply.kind = WorkerReply::Kind::exited;
      reply.detail = "the " + role_name_ + " process " +
                     (info ? info->describe() : std::string("went away")) +
                     " before it answered '" + op + "'";
      break;
    }
    case WaitOutcome::output_flood:
      reply.kind = WorkerReply::Kind::output_flood;
      reply.detail = "the " + role_name_ + " process wrote more than " +
                     std::to_string(process_->output_bytes_seen() >> 10) +
                     " KiB to stdout/stderr during '" + op + "'; killed";
      break;
    case WaitOutcome::memory_exceeded:
      reply.kind = WorkerReply::Kind::memory_exceeded;
      reply.detail = "the " + role_name_ + " process used more than its memory limit (" +
                     std::to_string(process_->peak_rss_bytes() >> 20) + " MiB resident) during '" +
                     op + "'; killed";
      break;
  }
  return reply;
}

Worker::~Worker() {
  if (member_) member_->untrack(process_->pid());
}

void Worker::join(DeviceGate::Member* member) {
  if (member_ || !member) return;
  member_ = member;
  member_->track(process_->pid());  // the child leads its own process group
  process_->set_frozen_clock([member] { return member->frozen_for(); });
}

void Worker::shutdown() {
  if (!process_) return;
  if (!process_->exit_info()) {
    process_->send_line(R"({"op":"exit"})");
    std::string line;
    process_->read_line(std::chrono::milliseconds(2000), line);
  }
  // Untracked before it is reaped: a reaped pid may be reused, by another lane's worker too.
  if (member_) {
    member_->untrack(process_->pid());
    member_ = nullptr;
  }
  process_->kill_all();
}

namespace {
std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

// The interpreter cannot run on the device asked for (cudal1_worker.py: _device_problem): neither
// the task nor a candidate is at fault, and what fixes it is another Python or another device.
Error environment_error(const json& b) {
  std::string problem = b.value("problem", "");
  std::string hint =
      problem == "no_cuda_build"
          ? "set CUDAL1_PYTHON (the Python cudal1 runs; eval and lint-task also take --python) to one whose torch is "
            "a CUDA build, e.g. a virtual environment with `pip install torch` (on Linux its wheels have CUDA; "
            "Debian's python3-torch has not), or evaluate on the CPU with --device cpu"
      : problem == "no_gpu"
          ? "check that this machine's GPU is visible (nvidia-smi, CUDA_VISIBLE_DEVICES) and that its driver supports "
            "the torch's CUDA, or evaluate on the CPU with --device cpu"
          : "name a GPU torch sees (--device cuda, or cuda:N below the count), or use --device cpu";
  auto text = [&](const char* key) { return b.contains(key) && b[key].is_string() ? b[key].get<std::string>() : std::string("none"); };
  return Error(ErrorKind::runner, b.value("message", "the Python cannot run on this device"), hint,
               "python " + text("python") + ", torch " + text("torch") + ", CUDA " + text("cuda"));
}

// A worker that could not take its device (a CUDA context, the libraries' handles): the machine's
// failure, never the task's or the candidate's, since no hosted code had run.
Error device_error(const Worker& worker, const std::string& why) {
  return Error(ErrorKind::runner, "the " + worker.role_name() + " worker could not take its device: " + why,
               "when the device was out of memory, other processes held it: run fewer lanes (--lanes), or give each "
               "cudal1 on this machine a share with CUDAL1_DEVICE_MEMORY_GB",
               "stderr: " + worker.stderr_tail(1500));
}

// The `error: device` reply's account: "RuntimeError: CUDA error: out of memory".
Error device_error(const Worker& worker, const json& reply_body) {
  return device_error(worker, reply_body.value("type", "error") + ": " + reply_body.value("message", ""));
}
}  // namespace

WorkerReply reference_call(Worker& ref, const json& req, std::chrono::milliseconds timeout,
                           const std::string& task) {
  WorkerReply reply = ref.request(req, timeout);
  if (reply.kind != WorkerReply::Kind::ok)
    throw Error(ErrorKind::runner, "the reference worker failed: " + reply.detail + died_of(reply, ref.stderr_tail()),
                "run the task on its own with python3 to see whether it works",
                "stderr: " + ref.stderr_tail(1500));
  const json& b = reply.body;
  if (b.value("ok", false)) return reply;
  if (b.value("error", "") == "environment") throw environment_error(b);
  if (b.value("error", "") == "device") throw device_error(ref, b);
  if (b.value("error", "") == "task") {
    const json& f = b["failure"];
    std::string where = f.value("file", task);
    if (f.contains("line") && f["line"].is_number()) where += ":" + std::to_string(f["line"].get<int>());
    std::string trace = f.value("traceback", "");
    throw Error(ErrorKind::task, where + ": " + f.value("message", "cannot load the task"),
                "a task is a KernelBench file: class Model(nn.Module), get_inputs(), get_init_inputs()",
                trace.empty() ? "" : "traceback tail: " + tail(trace, 800));
  }
  throw Error(ErrorKind::task,
              task + ": the reference Model failed during '" + req.value("op", "") + "': " +
                  b.value("type", "") + ": " + b.value("message", ""),
              "the task file itself must run: check it with python3",
              tail(b.value("traceback", ""), 2000));
}

void start_worker_device(Worker& worker, std::chrono::milliseconds timeout) {
  WorkerReply reply = worker.request({{"op", "start"}}, timeout);
  if (reply.kind != WorkerReply::Kind::ok) throw device_error(worker, reply.detail + died_of(reply, worker.stderr_tail()));
  const json& b = reply.body;
  if (b.value("error", "") == "environment") throw environment_error(b);  // this Python cannot use the device at all
  if (!b.value("ok", false)) throw device_error(worker, b);
}

std::string died_of(const WorkerReply& reply, std::string_view stderr_text) {
  if (reply.kind != WorkerReply::Kind::exited) return "";
  std::string exception(python_exception_line(stderr_text));
  return exception.empty() ? "" : ": " + exception;
}

std::string Worker::stderr_tail(std::size_t max_bytes) const {
  const std::string& t = process_->stderr_tail();
  return t.size() <= max_bytes ? t : t.substr(t.size() - max_bytes);
}

}  // namespace cudal1

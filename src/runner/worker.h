// runner/worker.h — a Python worker process spoken to in JSON lines.
//
// One request per line on the worker's fd 3, one reply per line on its fd 4. A reply is trusted
// only as far as its sender: the reference worker is trusted code; anything the candidate worker
// says is data to verify, never a verdict. The parent times each round trip on its own clock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/device_gate.h"
#include "runner/process.h"

namespace cudal1 {

using json = nlohmann::json;

enum class WorkerRole { reference, candidate };

struct WorkerSpec {
  WorkerRole role = WorkerRole::reference;
  std::string python;       // interpreter that has torch
  std::string workdir;      // cwd of the worker (private, per evaluation and role)
  std::string device;       // "cpu", "cuda", "cuda:1"
  std::string extensions_dir;  // TORCH_EXTENSIONS_DIR; empty: inside workdir (never reused)
  ProcessLimits limits;
  // Confined (code from outside): the workdir is its scratch; the interpreter's own paths and
  // the worker scripts are added to what it may read.
  std::optional<SandboxPolicy> sandbox;
  // Variables the caller sets for this worker on purpose (a task's strict mode), beside the
  // allow-listed ones; the worker's own settings (HOME, TMPDIR, the heap's) still win.
  std::map<std::string, std::string> env;
};

// How a request ended, from the parent's point of view.
struct WorkerReply {
  enum class Kind { ok, timeout, exited, output_flood, memory_exceeded, protocol_error } kind;
  json body;                 // the reply object when kind == ok
  double wall_ms = 0;        // the parent's clock over the whole round trip
  // Of that, time spent waiting for a CPU (kernel's count): the worker's main thread while it
  // worked, and the calling thread before it sent or after the reply came (runner/cpu_wait.h).
  double stalled_ms = 0;
  std::string detail;        // what went wrong, for a person, when kind != ok
};

class Worker {
 public:
  // Starts the process; throws Error(runner). It joins the thread's current gate member
  // (core/device_gate.h), if any, for as long as it lives.
  explicit Worker(const WorkerSpec& spec);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // Joins `member` (a worker started on another thread, before the evaluation ran).
  void join(DeviceGate::Member* member);

  WorkerReply request(const json& req, std::chrono::milliseconds timeout);
  // The same, waiting in slices: each time `slice` passes without an answer, `keep_waiting` is
  // asked, with how long the request has waited (time the worker spent frozen by its gate not
  // counted); false ends the wait as a timeout.
  using KeepWaiting = std::function<bool(std::chrono::milliseconds waited)>;
  WorkerReply request(const json& req, std::chrono::milliseconds slice, const KeepWaiting& keep_waiting);

  // Asks the worker to exit, then makes sure everything it started is gone.
  void shutdown();

  Process& process() { return *process_; }
  const std::string& workdir() const { return workdir_; }
  std::string stderr_tail(std::size_t max_bytes = 4000) const;
  const std::string& role_name() const { return role_name_; }  // "reference" or "candidate"

 private:
  std::unique_ptr<Process> process_;
  DeviceGate::Member* member_ = nullptr;
  std::string role_name_;
  std::string workdir_;
  std::string nonce_;  // every reply must carry it; a forged line does not
};

// The trusted reference worker's failures stop whatever asked: the task, not a candidate, is at
// fault. Returns a reply that answered ok; otherwise throws Error(runner) when the worker broke
// down or its Python cannot run on the device (a CPU-only torch asked for CUDA), or Error(task)
// with file:line when the task does not load or its Model fails.
WorkerReply reference_call(Worker& ref, const json& req, std::chrono::milliseconds timeout,
                           const std::string& task);

// ": <exception>" for a worker that died with a Python traceback on stderr (its only account of
// why: the traceback's first line says nothing); nothing for a timeout or any other end, whose
// stderr may hold an old, handled one.
std::string died_of(const WorkerReply& reply, std::string_view stderr_text);

// Makes the worker take its device (a CUDA context, its libraries' handles, the timer). A worker
// touches no device before: a queue starts workers ahead of their evaluation, and their contexts
// would hold GPU memory outside the lanes' budget of it. A worker sent no start takes the device
// with its first request. No hosted code has run when this is answered, so a failure is the
// machine's (a device others filled): throws Error(runner), with the worker's account of it.
void start_worker_device(Worker& worker, std::chrono::milliseconds timeout);

}  // namespace cudal1

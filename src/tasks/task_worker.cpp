#include "tasks/task_worker.h"

#include "store/store.h"

namespace fs = std::filesystem;

namespace cudal1 {

WorkerSpec task_worker_spec(const TaskWorkerQuery& q) {
  WorkerSpec spec{WorkerRole::reference, q.python, q.scratch.string(), q.device, {}, {}};
  // describe.py's replies carry every input's shape: a suite's worth is more than the default.
  spec.limits.output_bytes = std::size_t(64) << 20;
  SandboxPolicy policy{.hidden = q.hidden};
  for (auto& f : q.task_files) policy.readable.push_back(fs::absolute(f).string());
  if (q.store) policy.hidden.push_back(fs::absolute(q.store->path()).parent_path().string());
  spec.sandbox = std::move(policy);
  return spec;
}

}  // namespace cudal1

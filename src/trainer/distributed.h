// trainer/distributed.h — data-parallel training over several processes through torch's c10d:
// where a process stands among its peers (torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// LOCAL_RANK), and DataParallel, the process group every rank joins (a TCPStore on rank 0 for
// the rendezvous; NCCL between GPUs, Gloo between CPU processes) with the few collectives a
// trainer needs: gradients averaged in place, parameters copied from rank 0, scalars summed for
// the log, a barrier. A world of one process needs no group: every collective is then a no-op.
//
// Every rank must make the same collectives in the same order with tensors of the same shapes;
// a rank that stops making them (it crashed, or took another branch) leaves the others waiting
// until the timeout, when they fail with Error(runner).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudal1::trainer {

struct DistributedConfig {
  int rank = 0, world_size = 1;
  int local_rank = 0;                     // the rank among this host's processes: its GPU
  std::string master_addr = "127.0.0.1";  // where rank 0 listens for the rendezvous
  int master_port = 29500;
  // The launcher already serves the rendezvous store on MASTER_ADDR:MASTER_PORT (torchrun's agent
  // does, and says so with TORCHELASTIC_USE_AGENT_STORE=True): rank 0 joins it like the others.
  bool launcher_hosts_store = false;
  std::string backend = "auto";           // "gloo", "nccl", or "auto": nccl on CUDA, gloo on the CPU
  // How long a rank waits for the others: to join at the start, then in each collective. A rank
  // that finishes a step early waits for the slowest one, so this bounds the spread between
  // ranks, not the length of a step.
  int timeout_s = 1800;
};

// torchrun's variables: RANK, WORLD_SIZE, LOCAL_RANK (default: RANK), MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_USE_AGENT_STORE; none of them set is a world of one. Error(usage) on a malformed
// or inconsistent value.
DistributedConfig distributed_from_env();

// The device this rank trains on: "cuda" means the rank's own GPU (cuda:LOCAL_RANK) when there
// are several ranks; a device with an index, or the CPU, is taken as it is.
torch::Device rank_device(const std::string& device, const DistributedConfig& config);

class DataParallel {
 public:
  // Joins the group: rank 0 starts the rendezvous store (unless the launcher hosts it), every
  // rank waits (up to the timeout)
  // until all world_size ranks have joined. `device` is where this rank trains (rank_device): it
  // picks the backend when that is "auto", and NCCL's scalars go there. Error(usage) for a backend
  // this build or device cannot use, Error(runner) when the rendezvous fails.
  explicit DataParallel(DistributedConfig config, torch::Device device = torch::kCPU);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Whether this build can use the backend ("gloo", "nccl"): its headers were there to build it.
  static bool has_backend(const std::string& name);

  int rank() const { return config_.rank; }
  int world_size() const { return config_.world_size; }
  bool is_main() const { return config_.rank == 0; }  // the rank that writes files
  const DistributedConfig& config() const { return config_; }
  const std::string& backend() const { return backend_; }  // "gloo", "nccl", or "none" alone

  // Each tensor becomes the mean of its value over the ranks, in place. The tensors are packed
  // into a few flat buffers (one per dtype and device, at most bucket_bytes each), so a LoRA
  // adapter's gradients take one collective, not one per tensor.
  void all_reduce_mean(std::vector<torch::Tensor>& tensors);
  // Every rank's tensors take rank 0's values, in place (no autograd record, so parameters can
  // be passed). Error(usage) when the ranks pass different numbers of elements.
  void broadcast_from_rank0(std::vector<torch::Tensor>& tensors);
  double all_reduce_sum(double value);
  void barrier();

  static constexpr int64_t bucket_bytes = int64_t(64) << 20;

 private:
  struct Group;
  enum class Reduction { sum, mean, broadcast };
  void collective(std::vector<torch::Tensor>& tensors, Reduction reduction);

  DistributedConfig config_;
  std::string backend_ = "none";
  std::unique_ptr<Group> group_;  // null alone
};

}  // namespace cudal1::trainer

#include "trainer/distributed.h"

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

// libtorch 2 moved the collectives from ProcessGroup into a Backend per device type; a
// ProcessGroupGloo or ProcessGroupNCCL is one of those.
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

// The backends' headers need their libraries' headers too, which a libtorch may ship without
// (the pip wheel has no gloo/, Debian's needs libgloo-dev): a backend whose headers are missing
// is refused with a hint at run time instead of breaking the build.
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define CUDAL1_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define CUDAL1_HAVE_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"

namespace cudal1::trainer {

namespace {

#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

const char* const kLaunchHint =
    "torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; by hand, give every rank the same "
    "WORLD_SIZE, MASTER_ADDR and MASTER_PORT and its own RANK from 0 to WORLD_SIZE - 1";

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, int fallback, int low, int high) {
  std::optional<std::string> text = env(name);
  if (!text) return fallback;
  int value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < low || value > high)
    throw Error(ErrorKind::usage,
                std::string(name) + "=" + *text + " is not a whole number from " + std::to_string(low) + " to " +
                    std::to_string(high),
                kLaunchHint);
  return value;
}

void check_rank(const DistributedConfig& c) {
  if (c.world_size < 1 || c.rank < 0 || c.rank >= c.world_size || c.local_rank < 0)
    throw Error(ErrorKind::usage,
                "rank " + std::to_string(c.rank) + " (local " + std::to_string(c.local_rank) + ") does not fit a world of " +
                    std::to_string(c.world_size),
                kLaunchHint);
  if (c.master_port < 1 || c.master_port > 65535)
    throw Error(ErrorKind::usage, "master port " + std::to_string(c.master_port) + " is not a TCP port", kLaunchHint);
  if (c.timeout_s < 1)
    throw Error(ErrorKind::usage, "a distributed timeout of " + std::to_string(c.timeout_s) + " s", "give at least 1 s");
}

// c10's errors carry a C++ backtrace after the message; the person reading ours needs the message.
std::string reason(const std::exception& e) {
  auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (text.size() > 400) text = text.substr(0, 400) + "...";
  return text;
}

std::string where(const DistributedConfig& c) { return c.master_addr + ":" + std::to_string(c.master_port); }

const char* const kJoinHint =
    "start every rank, and check that they agree on WORLD_SIZE, MASTER_ADDR and MASTER_PORT; a rank that never "
    "comes makes the others give up after the timeout";

std::string not_all_joined(const DistributedConfig& c, const std::string& why) {
  return "rank " + std::to_string(c.rank) + ": not all " + std::to_string(c.world_size) + " ranks joined at " + where(c) +
         " within " + std::to_string(c.timeout_s) + " s (" + why + ")";
}

std::string resolve_backend(const std::string& requested, torch::Device device) {
  std::string backend = requested == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : requested;
  if (backend != "gloo" && backend != "nccl")
    throw Error(ErrorKind::usage, "no distributed backend called " + requested, "use gloo, nccl or auto");
  if (backend == "nccl" && !device.is_cuda())
    throw Error(ErrorKind::usage, "NCCL moves tensors between GPUs, and this rank trains on " + device.str(),
                "train on the GPU (-d cuda), or use the gloo backend between CPU processes");
  if (!DataParallel::has_backend(backend))
    throw Error(ErrorKind::usage, "this build of cudal1 has no " + backend + " backend",
                backend == "gloo"
                    ? "build against a libtorch with Gloo and gloo's headers (Debian: libgloo-dev), or use nccl on GPUs"
                    : "build against a CUDA libtorch (the pip wheel) with nccl.h on the include path, or use gloo");
  return backend;
}

c10::intrusive_ptr<c10d::Store> join_rendezvous(const DistributedConfig& c, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = uint16_t(c.master_port);
  options.isServer = c.rank == 0 && !c.launcher_hosts_store;
  options.numWorkers = std::size_t(c.world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  try {
    // A launcher's store holds its own keys too: ours stay apart under a prefix.
    return c10::make_intrusive<c10d::PrefixStore>("cudal1/", c10::make_intrusive<c10d::TCPStore>(c.master_addr, options));
  } catch (const std::exception& e) {
    const std::string why = reason(e);
    if (options.isServer && (why.find("in use") != std::string::npos || why.find("errno: 98") != std::string::npos))
      throw Error(ErrorKind::usage, "rank 0 cannot listen on " + where(c) + ": the port is in use",
                  "set MASTER_PORT to a free port (the same on every rank); another job may hold this one");
    throw Error(ErrorKind::runner,
                options.isServer ? not_all_joined(c, why)
                                 : "rank " + std::to_string(c.rank) + " could not reach the rendezvous at " + where(c) +
                                       " within " + std::to_string(c.timeout_s) + " s (" + why + ")",
                kJoinHint);
  }
}

Error collective_failed(const DistributedConfig& c, const std::string& backend, const std::exception& e) {
  return Error(ErrorKind::runner,
               "rank " + std::to_string(c.rank) + ": a " + backend + " collective with the other ranks failed: " + reason(e),
               "another rank has probably stopped (its own output says why) or runs more than " +
                   std::to_string(c.timeout_s) + " s behind; every rank must run the same steps");
}

#ifdef CUDAL1_HAVE_GLOO
// Gloo's default device is the address the host name resolves to, which on a single host may be
// an interface the ranks cannot reach each other on; loopback always works there.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (std::optional<std::string> ifname = env("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
  const bool loopback = master_addr == "localhost" || master_addr == "::1" || master_addr.rfind("127.", 0) == 0;
  return loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                  : c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

c10::intrusive_ptr<Collectives> make_collectives(const std::string& backend, const c10::intrusive_ptr<c10d::Store>& store,
                                                  const DistributedConfig& c, std::chrono::milliseconds timeout) {
#ifdef CUDAL1_HAVE_GLOO
  if (backend == "gloo") {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(c.master_addr));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, c.rank, c.world_size, options);
  }
#endif
#ifdef CUDAL1_HAVE_NCCL
  if (backend == "nccl") {
    // Without blocking waits NCCL's wait() returns at once and a stuck peer is left to NCCL's
    // watchdog, which aborts the process: the promised Error(runner) after the timeout needs
    // them. Read when the group is made; a user's own setting stands.
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, c.rank, c.world_size, options);
  }
#endif
  throw Error(ErrorKind::internal, "backend " + backend + " passed resolve_backend but is not built", "report this");
}

}  // namespace

DistributedConfig distributed_from_env() {
  DistributedConfig c;
  const bool has_rank = env("RANK").has_value(), has_world = env("WORLD_SIZE").has_value();
  if (has_rank != has_world)
    throw Error(ErrorKind::usage, has_rank ? "RANK is set but WORLD_SIZE is not" : "WORLD_SIZE is set but RANK is not",
                kLaunchHint);
  c.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 16);
  c.rank = env_int("RANK", 0, 0, c.world_size - 1);
  c.local_rank = env_int("LOCAL_RANK", c.rank, 0, c.world_size - 1);
  c.master_addr = env("MASTER_ADDR").value_or(c.master_addr);
  c.master_port = env_int("MASTER_PORT", c.master_port, 1, 65535);
  c.launcher_hosts_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  return c;
}

torch::Device rank_device(const std::string& device, const DistributedConfig& config) {
  torch::Device d(device);
  if (d.is_cuda() && !d.has_index() && config.world_size > 1) return torch::Device(torch::kCUDA, int8_t(config.local_rank));
  return d;
}

bool DataParallel::has_backend(const std::string& name) {
#ifdef CUDAL1_HAVE_GLOO
  if (name == "gloo") return true;
#endif
#ifdef CUDAL1_HAVE_NCCL
  if (name == "nccl") return true;
#endif
  return false;
}

struct DataParallel::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> collectives;
  torch::Device scalar_device = torch::kCPU;  // NCCL reduces nothing on the CPU
};

DataParallel::DataParallel(DistributedConfig config, torch::Device device) : config_(std::move(config)) {
  check_rank(config_);
  if (config_.world_size == 1) return;
  device = rank_device(device.str(), config_);
  backend_ = resolve_backend(config_.backend, device);
#ifdef CUDAL1_HAVE_NCCL
  // As torchrun scripts do: what allocates on "the" GPU (NCCL's own buffers among them) must
  // use this rank's, not every rank GPU 0.
  if (backend_ == "nccl") {
    try {
      c10::cuda::set_device(device.index());
    } catch (const std::exception& e) {
      throw Error(ErrorKind::usage, "rank " + std::to_string(config_.rank) + " cannot use " + device.str() + ": " + reason(e),
                  "LOCAL_RANK picks the rank's GPU: start at most as many ranks on a host as it has GPUs visible");
    }
  }
#endif
  const std::chrono::milliseconds timeout = std::chrono::seconds(config_.timeout_s);
  auto group = std::make_unique<Group>();
  group->store = join_rendezvous(config_, timeout);
  try {
    group->collectives = make_collectives(backend_, group->store, config_, timeout);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // The backends meet through the store, so a rank that never came shows up here as a timeout.
    const std::string why = reason(e);
    const bool timed_out = why.find("imeout") != std::string::npos || why.find("timed out") != std::string::npos;
    if (timed_out) throw Error(ErrorKind::runner, not_all_joined(config_, backend_ + ": " + why), kJoinHint);
    throw Error(ErrorKind::runner, "rank " + std::to_string(config_.rank) + " could not start " + backend_ + ": " + why,
                backend_ == "gloo" ? "set GLOO_SOCKET_IFNAME to the network interface the hosts reach each other on"
                                   : "check that every rank sees its GPU (LOCAL_RANK); NCCL_DEBUG=INFO says more");
  }
  if (backend_ == "nccl") group->scalar_device = device;
  group_ = std::move(group);
}

DataParallel::~DataParallel() {
#if TORCH_VERSION_MAJOR >= 2
  // NCCL's communicators are torn down here rather than at exit, where the CUDA context may be gone.
  if (group_) {
    try {
      group_->collectives->shutdown();
    } catch (const std::exception&) {
    }
  }
#endif
}

void DataParallel::collective(std::vector<torch::Tensor>& tensors, Reduction reduction) {
  if (!group_) return;
  // Buckets in the tensors' order, so every rank packs the same buffers.
  using Key = std::tuple<c10::ScalarType, c10::DeviceType, c10::DeviceIndex>;
  std::vector<std::vector<std::size_t>> buckets;
  std::map<Key, std::pair<std::size_t, int64_t>> open;  // key -> (bucket, its bytes)
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const torch::Tensor& t = tensors[i];
    if (!t.defined())
      throw Error(ErrorKind::internal, "a collective was given an undefined tensor",
                  "give every rank's tensors values (zeros for a gradient the step did not reach)");
    if (backend_ == "nccl" && !t.is_cuda())
      throw Error(ErrorKind::usage, "NCCL moves CUDA tensors only, and one here is on " + t.device().str(),
                  "keep the trained tensors on the rank's GPU, or use the gloo backend");
    const Key key{t.scalar_type(), t.device().type(), t.device().index()};
    const int64_t bytes = t.numel() * int64_t(t.element_size());
    auto it = open.find(key);
    if (it == open.end() || it->second.second + bytes > bucket_bytes) {
      buckets.emplace_back();
      it = open.insert_or_assign(key, std::pair<std::size_t, int64_t>(buckets.size() - 1, 0)).first;
    }
    buckets[it->second.first].push_back(i);
    it->second.second += bytes;
  }
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets) {
    std::vector<torch::Tensor> parts;
    for (std::size_t i : bucket) parts.push_back(tensors[i].detach().reshape({-1}));
    std::vector<torch::Tensor> flat = {torch::cat(parts)};
    try {
      if (reduction == Reduction::broadcast) {
        c10d::BroadcastOptions options;
        options.rootRank = 0;
        group_->collectives->broadcast(flat, options)->wait();
      } else {
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        group_->collectives->allreduce(flat, options)->wait();
      }
    } catch (const std::exception& e) {
      throw collective_failed(config_, backend_, e);
    }
    if (reduction == Reduction::mean) flat[0].div_(double(world_size()));
    int64_t offset = 0;
    for (std::size_t i : bucket) {
      torch::Tensor& t = tensors[i];
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void DataParallel::all_reduce_mean(std::vector<torch::Tensor>& tensors) {
  for (const torch::Tensor& t : tensors)
    if (t.defined() && !t.is_floating_point())
      throw Error(ErrorKind::internal, "the mean of an integer tensor over ranks", "average floating-point tensors only");
  collective(tensors, Reduction::mean);
}

void DataParallel::broadcast_from_rank0(std::vector<torch::Tensor>& tensors) {
  if (!group_) return;
  // Unequal buffers would make Gloo fail obscurely and NCCL hang or corrupt: every rank learns
  // the largest and smallest element count first (max of n and of -n), and all refuse together.
  int64_t numel = 0;
  for (const torch::Tensor& t : tensors) numel += t.defined() ? t.numel() : 0;
  std::vector<torch::Tensor> extent = {torch::tensor({numel, -numel}, torch::TensorOptions().dtype(torch::kInt64))
                                           .to(group_->scalar_device)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  try {
    group_->collectives->allreduce(extent, options)->wait();
  } catch (const std::exception& e) {
    throw collective_failed(config_, backend_, e);
  }
  const int64_t most = extent[0][0].item<int64_t>(), least = -extent[0][1].item<int64_t>();
  if (most != least)
    throw Error(ErrorKind::usage,
                "the ranks train different parameters: from " + std::to_string(least) + " to " + std::to_string(most) +
                    " elements",
                "start every rank with the same model, adapter settings and --full");
  collective(tensors, Reduction::broadcast);
}

double DataParallel::all_reduce_sum(double value) {
  if (!group_) return value;
  std::vector<torch::Tensor> box = {
      torch::tensor({value}, torch::TensorOptions().dtype(torch::kFloat64)).to(group_->scalar_device)};
  collective(box, Reduction::sum);
  return box[0].item<double>();
}

void DataParallel::barrier() {
  // An all-reduce rather than the backends' barrier: NCCL's guesses a GPU for it.
  all_reduce_sum(0.0);
}

}  // namespace cudal1::trainer

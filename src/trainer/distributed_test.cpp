// Data-parallel training on the CPU: ranks are threads of this test, each with its own Gloo
// process group over a TCPStore on a free loopback port. Collectives checked by hand on small
// tensors, torchrun's variables, the errors of a bad launch, and the point of it all: two ranks
// on half a batch each update as one process on the whole batch does, in one optimiser step and
// in a whole SFT run.
#include "trainer/distributed.h"

#include "trainer/lora.h"
#include "trainer/objectives.h"
#include "trainer/sft.h"
#include "trainer/test_support.h"
#include "trainer/train.h"

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

using namespace cudal1;
using namespace cudal1::trainer;
using cudal1::trainer::test::max_abs_diff;
namespace fs = std::filesystem;

namespace {

// A loopback socket bound to a port the kernel picked; kept open (and listening) as long as the
// object lives, so that a test can also hold a port busy.
class LoopbackPort {
 public:
  explicit LoopbackPort(bool listen_on_it = false) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t n = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), n) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0 || (listen_on_it && listen(fd_, 4) != 0))
      ADD_FAILURE() << "no loopback port";
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_, port_ = 0;
};

DistributedConfig rank_of(int rank, int world, int port, int timeout_s = 60) {
  DistributedConfig c;
  c.rank = rank;
  c.world_size = world;
  c.local_rank = rank;
  c.master_port = port;
  c.backend = "gloo";
  c.timeout_s = timeout_s;
  return c;
}

// Runs body(rank's DataParallel) on `world` threads and rethrows the first rank's failure. With
// launcher_hosts_store, the test serves the rendezvous store itself, as torchrun's agent does.
template <typename Body>
void on_ranks(int world, Body body, bool launcher_hosts_store = false) {
  const int port = LoopbackPort().port();  // free again once the probe is closed
  c10::intrusive_ptr<c10d::Store> agent;
  if (launcher_hosts_store) {
    c10d::TCPStoreOptions options;
    options.port = uint16_t(port);
    options.isServer = true;
    options.waitWorkers = false;
    agent = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  }
  std::vector<std::exception_ptr> failures(std::size_t(world), nullptr);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      try {
        DistributedConfig c = rank_of(r, world, port);
        c.launcher_hosts_store = launcher_hosts_store;
        DataParallel dp(c);
        body(dp);
      } catch (...) {
        failures[std::size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (auto& f : failures)
    if (f) std::rethrow_exception(f);
}

#define SKIP_WITHOUT_GLOO()                   \
  if (!DataParallel::has_backend("gloo"))     \
  GTEST_SKIP() << "this build has no Gloo (gloo's headers, Debian's libgloo-dev, were missing)"

// Sets environment variables (nullptr: unset) for the object's life.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
      value ? setenv(name, value, 1) : unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (auto& [name, value] : saved_) value ? setenv(name.c_str(), value->c_str(), 1) : unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

const std::initializer_list<std::pair<const char*, const char*>> kNoLaunch = {
    {"RANK", nullptr},        {"WORLD_SIZE", nullptr},  {"LOCAL_RANK", nullptr},
    {"MASTER_ADDR", nullptr}, {"MASTER_PORT", nullptr}, {"TORCHELASTIC_USE_AGENT_STORE", nullptr}};

}  // namespace

TEST(Distributed, TorchrunsVariablesPlaceTheProcess) {
  {
    ScopedEnv launch(kNoLaunch);
    DistributedConfig alone = distributed_from_env();
    EXPECT_EQ(alone.world_size, 1);
    EXPECT_EQ(alone.rank, 0);
    EXPECT_FALSE(alone.launcher_hosts_store);
  }
  ScopedEnv launch({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"}, {"MASTER_PORT", "29511"},
                    {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  DistributedConfig c = distributed_from_env();
  EXPECT_TRUE(c.launcher_hosts_store);
  EXPECT_EQ(c.rank, 5);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.master_addr, "10.0.0.2");
  EXPECT_EQ(c.master_port, 29511);
  EXPECT_EQ(rank_device("cuda", c), torch::Device(torch::kCUDA, 1)) << "\"cuda\" is the rank's own GPU";
  EXPECT_EQ(rank_device("cuda:3", c), torch::Device(torch::kCUDA, 3));
  EXPECT_EQ(rank_device("cpu", c), torch::Device(torch::kCPU));
}

TEST(Distributed, AMalformedLaunchIsAUsageError) {
  for (auto vars : std::vector<std::vector<std::pair<const char*, const char*>>>{
           {{"RANK", "0"}, {"WORLD_SIZE", "two"}},
           {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
           {{"RANK", "1"}, {"WORLD_SIZE", nullptr}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}}}) {
    ScopedEnv clean(kNoLaunch);
    std::string shown;
    for (auto& [name, value] : vars) {
      value ? setenv(name, value, 1) : unsetenv(name);
      shown += std::string(name) + "=" + (value ? value : "(unset)") + " ";
    }
    Error e = test::expect_error([] { distributed_from_env(); });
    EXPECT_EQ(e.kind(), ErrorKind::usage) << shown;
    EXPECT_NE(e.hint().find("torchrun"), std::string::npos) << shown;
  }
}

TEST(Distributed, AloneEveryCollectiveIsANoOp) {
  DataParallel dp{DistributedConfig{}};
  EXPECT_EQ(dp.world_size(), 1);
  EXPECT_TRUE(dp.is_main());
  EXPECT_EQ(dp.backend(), "none");
  std::vector<torch::Tensor> t = {torch::tensor({1.f, 2.f}), torch::tensor({3.0}, torch::kFloat64)};
  dp.all_reduce_mean(t);
  dp.broadcast_from_rank0(t);
  dp.barrier();
  EXPECT_TRUE(t[0].equal(torch::tensor({1.f, 2.f})));
  EXPECT_TRUE(t[1].equal(torch::tensor({3.0}, torch::kFloat64)));
  EXPECT_EQ(dp.all_reduce_sum(2.5), 2.5);
}

TEST(Distributed, ABackendThatCannotServeTheDeviceIsRefusedBeforeAnyNetwork) {
  DistributedConfig c = rank_of(0, 2, 1);
  c.backend = "nccl";
  Error nccl = test::expect_error([&] { DataParallel dp(c, torch::kCPU); });
  EXPECT_EQ(nccl.kind(), ErrorKind::usage);
  EXPECT_NE(nccl.hint().find("gloo"), std::string::npos);
  c.backend = "mpi";
  EXPECT_EQ(test::expect_error([&] { DataParallel dp(c); }).kind(), ErrorKind::usage);
  c = rank_of(2, 2, 1);
  EXPECT_EQ(test::expect_error([&] { DataParallel dp(c); }).kind(), ErrorKind::usage);
}

TEST(Distributed, TwoRanksAverageSumAndBroadcast) {
  SKIP_WITHOUT_GLOO();
  on_ranks(2, [](DataParallel& dp) {
    const double r = dp.rank();
    EXPECT_EQ(dp.backend(), "gloo");
    // Two dtypes (two buffers), shapes that must come back whole.
    std::vector<torch::Tensor> grads = {torch::tensor({r + 1, 2 * (r + 1)}, torch::kFloat32),
                                        torch::full({1, 1}, r, torch::kFloat64),
                                        torch::full({2, 2}, 4 * r, torch::kFloat32)};
    dp.all_reduce_mean(grads);
    EXPECT_TRUE(grads[0].equal(torch::tensor({1.5f, 3.f})));
    EXPECT_TRUE(grads[1].equal(torch::full({1, 1}, 0.5, torch::kFloat64)));
    EXPECT_TRUE(grads[2].equal(torch::full({2, 2}, 2.f)));

    // A parameter that requires grad takes rank 0's values without an autograd record.
    torch::Tensor weight = (dp.rank() == 0 ? torch::tensor({7.f, 8.f, 9.f}) : torch::zeros({3})).requires_grad_(true);
    std::vector<torch::Tensor> params = {weight};
    dp.broadcast_from_rank0(params);
    EXPECT_TRUE(weight.detach().equal(torch::tensor({7.f, 8.f, 9.f})));
    EXPECT_TRUE(weight.is_leaf());

    EXPECT_EQ(dp.all_reduce_sum(r + 1), 3.0);
    dp.barrier();
  });
}

TEST(Distributed, RanksJoinTheStoreTheirLauncherServes) {
  SKIP_WITHOUT_GLOO();
  on_ranks(2, [](DataParallel& dp) { EXPECT_EQ(dp.all_reduce_sum(1.0), 2.0); }, /*launcher_hosts_store=*/true);
}

TEST(Distributed, RanksWithDifferentParametersAllRefuseTheBroadcast) {
  SKIP_WITHOUT_GLOO();
  on_ranks(2, [](DataParallel& dp) {
    std::vector<torch::Tensor> params = {torch::zeros({3 + dp.rank()})};
    Error e = test::expect_error([&] { dp.broadcast_from_rank0(params); });
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(e.message().find("different parameters"), std::string::npos) << e.message();
  });
}

TEST(Distributed, ARankThatNeverJoinsEndsInATimeout) {
  SKIP_WITHOUT_GLOO();
  const int port = LoopbackPort().port();
  Error e = test::expect_error([&] { DataParallel dp(rank_of(0, 2, port, /*timeout_s=*/1)); });
  EXPECT_EQ(e.kind(), ErrorKind::runner) << e.describe();
  EXPECT_NE(e.message().find("joined"), std::string::npos) << e.message();
}

TEST(Distributed, APortInUseIsNamed) {
  SKIP_WITHOUT_GLOO();
  LoopbackPort busy(/*listen_on_it=*/true);
  Error e = test::expect_error([&] { DataParallel dp(rank_of(0, 2, busy.port(), /*timeout_s=*/2)); });
  EXPECT_EQ(e.kind(), ErrorKind::usage) << e.describe();
  EXPECT_NE(e.hint().find("MASTER_PORT"), std::string::npos) << e.describe();
}

namespace {

using Rows = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;
using Named = std::vector<std::pair<std::string, torch::Tensor>>;

Rows four_rows() {
  return {{{1, 2, 3}, {40, 41, 42, 43}}, {{4, 5}, {50, 51, 52}}, {{6, 7, 8, 9}, {60, 61}}, {{10}, {70, 71, 72, 73, 74}}};
}

// The tiny Hugging Face Llama with the same LoRA factors on every call.
std::shared_ptr<CausalLM> adapted_llama() {
  auto model = load_causal_lm(test::fixture("llama"));
  LoraConfig c;
  c.r = 8;
  c.alpha = 16;
  c.dropout = 0.0;
  apply_lora(*model, c, /*seed=*/3);
  model->train();
  return model;
}

// Two SFT steps on `rows`; returns each step's gradient norm (before clipping).
std::vector<double> two_steps(CausalLM& model, Optimizer& opt, const Rows& rows) {
  std::vector<double> norms;
  for (int i = 0; i < 2; ++i) {
    TokenBatch b = make_batch(rows, 0);
    norms.push_back(opt.backward_and_step(sft_loss(completion_logprobs(model, b), b.completion_mask)).grad_norm);
  }
  return norms;
}

double farthest(const Named& a, const Named& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, max_abs_diff(a[i].second, b[i].second));
  return d;
}

}  // namespace

TEST(Distributed, TwoRanksOnHalfTheBatchStepAsOneProcessOnTheWholeBatch) {
  SKIP_WITHOUT_GLOO();
  OptimConfig c;
  c.lr = 1e-2;
  c.max_grad_norm = 0.5;  // clipping binds: it must act on the averaged gradient
  auto whole = adapted_llama();
  Optimizer one(lora_parameters(*whole), c);
  const std::vector<double> whole_norms = two_steps(*whole, one, four_rows());
  ASSERT_GT(whole_norms[0], c.max_grad_norm);

  std::vector<std::shared_ptr<CausalLM>> ranks(2);
  std::vector<std::vector<double>> rank_norms(2);
  on_ranks(2, [&](DataParallel& dp) {
    auto model = adapted_llama();
    Optimizer opt(lora_parameters(*model), c);
    opt.set_gradient_sync([&dp](std::vector<torch::Tensor>& grads) { dp.all_reduce_mean(grads); });
    Rows all = four_rows(), half(all.begin() + 2 * dp.rank(), all.begin() + 2 * dp.rank() + 2);
    rank_norms[std::size_t(dp.rank())] = two_steps(*model, opt, half);
    ranks[std::size_t(dp.rank())] = model;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(farthest(lora_parameters(*ranks[r]), lora_parameters(*whole)), 1e-5) << "rank " << r;
    for (int step = 0; step < 2; ++step)
      EXPECT_NEAR(rank_norms[r][step], whole_norms[step], 1e-5 * whole_norms[step]) << "rank " << r << " step " << step;
  }

  // What the all-reduce is for: half the batch alone ends elsewhere.
  auto alone = adapted_llama();
  Optimizer solo(lora_parameters(*alone), c);
  Rows all = four_rows();
  two_steps(*alone, solo, Rows(all.begin(), all.begin() + 2));
  EXPECT_GT(farthest(lora_parameters(*alone), lora_parameters(*whole)), 1e-4);
}

namespace {

// A store with `n` accepted answers over a few tasks, and a tiny random Llama beside it.
struct SftWorld {
  test::ScratchFolder dir;
  SftRunOptions o;
  explicit SftWorld(int n) {
    test::write_tiny_llama(dir / "model");
    Store store(dir / "store.db");
    std::vector<RlSample> answers;
    for (int i = 0; i < n; ++i) {
      RlSample x;
      const std::string task = "task" + std::to_string(i % 3);
      x.run = "r";
      x.task_id = task;
      x.task_hash = "h-" + task;
      x.round = 1;
      x.slot = i;
      x.policy = "rewrite";
      x.prompt = "Make " + task + " faster.";
      x.completion = "## Code Implementation\n```python\nreturn x * " + std::to_string(i) + "\n```\n";
      x.candidate_hash = "c" + std::to_string(i);
      x.status = "ok";
      x.accepted = true;
      x.speedup = 1.0 + i;
      answers.push_back(x);
    }
    store.save_round(answers);
    o.model_dir = dir / "model";
    o.lora.r = 4;
    o.lora.alpha = 8;
    o.lora.dropout = 0.0;
    o.optim.lr = 5e-2;
    o.optim.warmup_steps = 1;
    o.epochs = 2;
    o.checkpoint_every = 1;
  }
  std::unique_ptr<Store> open_store() const { return std::make_unique<Store>(dir / "store.db"); }
};

std::vector<double> logged_losses(const fs::path& log) {
  std::vector<double> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  return out;
}

}  // namespace

// 5 answers, 2 ranks of 2: global batches of 4 and 1, so in the last one rank 0 has nothing to
// learn from and rank 1 alone carries the batch.
TEST(Distributed, TwoRankSftWritesOnRankZeroAndEqualsOneProcessOnTheDoubledBatch) {
  SKIP_WITHOUT_GLOO();
  SftWorld world(5);
  SftRunOptions single = world.o;
  single.out_dir = world.dir / "single";
  single.batch = 4;
  auto store = world.open_store();
  SftRunSummary expected = run_sft(*store, single);
  ASSERT_EQ(expected.examples, 5u);
  ASSERT_EQ(expected.steps, 4);

  std::vector<std::unique_ptr<Store>> stores;
  for (int r = 0; r < 2; ++r) stores.push_back(world.open_store());
  std::vector<SftRunSummary> got(2);
  on_ranks(2, [&](DataParallel& dp) {
    SftRunOptions o = world.o;
    // Rank 1 is given its own OUT only to show it writes nothing there.
    o.out_dir = world.dir / (dp.rank() == 0 ? "parallel" : "rank1"), o.batch = 2, o.data_parallel = &dp;
    got[std::size_t(dp.rank())] = run_sft(*stores[std::size_t(dp.rank())], o);
  });
  EXPECT_FALSE(fs::exists(world.dir / "rank1"));
  for (auto& s : got) {
    EXPECT_EQ(s.steps, expected.steps);
    EXPECT_NEAR(s.last_loss, expected.last_loss, 1e-5);
  }
  const fs::path out = world.dir / "parallel";
  EXPECT_TRUE(fs::exists(out / "sft.jsonl"));
  EXPECT_FALSE(fs::exists(out / "checkpoint"));
  std::vector<double> single_log = logged_losses(single.out_dir / "train_log.jsonl"),
                      parallel_log = logged_losses(out / "train_log.jsonl");
  ASSERT_EQ(parallel_log.size(), single_log.size());
  for (std::size_t i = 0; i < single_log.size(); ++i) EXPECT_NEAR(parallel_log[i], single_log[i], 1e-5) << "step " << i + 1;
  auto a = SafetensorsFile::open(expected.output / "adapter_model.safetensors").all(true);
  auto b = SafetensorsFile::open(out / "adapter" / "adapter_model.safetensors").all(true);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) EXPECT_LT(max_abs_diff(t, b.at(name)), 1e-5) << name;
}

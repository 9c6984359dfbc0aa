// The queue over a fault-injecting double of the evaluator (queue/fake_engine.h): every job is
// reported once with its own verdict, lanes run side by side on their own devices, one lane
// keeps job order, and what fails (a prepare, a run, a prebuild) is kept in that job's result
// and said in the log while the other jobs go on.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "core/hash.h"
#include "queue/fake_engine.h"
#include "queue/queue.h"
#include "store/store.h"
#include "task_facts/store_task_facts.h"

using namespace cudal1;
using fakes::FakeEngine;
using fakes::Stage;

namespace {

std::vector<QueueJob> jobs_named(const std::vector<std::string>& ids) {
  std::vector<QueueJob> jobs;
  for (auto& id : ids) {
    QueueJob j;
    j.id = id;
    j.options.task_path = "task.py";
    j.options.candidate_path = id + ".py";
    jobs.push_back(j);
  }
  return jobs;
}

// A judge that accepts every candidate and calls `fault`, which throws, for
// the candidate `faulty` at `stage`.
std::function<EvalResult(const EvalOptions&, Stage)> faulting(const std::string& faulty, Stage at,
                                                              std::function<void()> fault) {
  return [=](const EvalOptions& o, Stage stage) {
    if (o.candidate_path == faulty && stage == at) fault();
    return fakes::accepted_result(2.0);
  };
}

struct Ran {
  std::vector<QueueResult> results;  // in the order they came back
  std::vector<std::string> log;
  QueueStats stats;
  const QueueResult& by_id(const std::string& id) const {
    for (auto& r : results)
      if (r.id == id) return r;
    throw std::logic_error("no result for " + id);
  }
  bool logged(const std::string& part) const {
    for (auto& l : log)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

Ran run(const std::vector<QueueJob>& jobs, QueueConfig config, std::shared_ptr<FakeEngine> engine) {
  Ran out;
  config.engine = engine;
  config.log = [&](const std::string& line) { out.log.push_back(line); };
  std::set<std::size_t> seen;
  out.stats = run_queue(jobs, config, [&](const QueueResult& r) {
    EXPECT_TRUE(seen.insert(r.index).second) << "job " << r.index << " reported twice";
    EXPECT_EQ(r.id, jobs.at(r.index).id);
    out.results.push_back(r);
  });
  EXPECT_EQ(out.results.size(), jobs.size());
  return out;
}

}  // namespace

TEST(QueueUnit, LanesRunSideBySideEachOnItsOwnDeviceAndReportEveryJobOnce) {
  auto engine = std::make_shared<FakeEngine>();
  engine->run_time = std::chrono::milliseconds(30);
  engine->judge = [](const EvalOptions& o, Stage) {
    return o.candidate_path == "c.py" ? fakes::verdict_result(Status::incorrect)
                                      : fakes::accepted_result(1.5);
  };
  QueueConfig config;
  config.devices = {"cuda:0", "cuda:1", "cuda:1"};
  config.prebuild_threads = 2;
  config.prebuild = [](const QueueJob&) { return std::shared_ptr<const BuildOutcome>(); };
  Ran r = run(jobs_named({"a", "b", "c", "d", "e", "f"}), config, engine);
  for (auto& q : r.results) {
    ASSERT_TRUE(q.result) << q.id;
    EXPECT_EQ(q.result->candidate_path, q.id + ".py") << "a lane reported another job's verdict";
    EXPECT_EQ(q.result->accepted, q.id != "c") << q.id;
  }
  std::set<std::string> devices;
  for (auto& o : engine->ran()) {
    devices.insert(o.device);
    // Two lanes on cuda:1 share it through a gate; cuda:0's lane has it alone.
    EXPECT_EQ(bool(o.device_gate), o.device == "cuda:1") << o.device;
    EXPECT_TRUE(o.memory_budget) << "lanes share the host's memory";
  }
  EXPECT_EQ(devices, (std::set<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_GT(engine->most_at_once(), 1) << "the lanes took turns instead of running together";
  EXPECT_EQ(r.stats.done, 6u);
  EXPECT_EQ(r.stats.failed, 0u);
  EXPECT_TRUE(r.log.empty());
}

TEST(QueueUnit, OneLaneRunsAndReportsJobsInJobOrder) {
  for (int prefetch : {0, 1, 3}) {
    auto engine = std::make_shared<FakeEngine>();
    QueueConfig config;
    config.prefetch = prefetch;
    Ran r = run(jobs_named({"a", "b", "c", "d"}), config, engine);
    std::vector<std::string> reported, ran;
    for (auto& q : r.results) reported.push_back(q.id);
    for (auto& o : engine->ran()) ran.push_back(o.candidate_path);
    EXPECT_EQ(reported, (std::vector<std::string>{"a", "b", "c", "d"})) << "prefetch " << prefetch;
    EXPECT_EQ(ran, (std::vector<std::string>{"a.py", "b.py", "c.py", "d.py"}))
        << "prefetch " << prefetch;
  }
}

// A lane's prepared evaluations hold their workers (on a GPU, a CUDA context each) outside any
// memory budget until they run: no more of them than the prefetch asked for.
TEST(QueueUnit, ALaneHoldsNoMorePreparedEvaluationsThanItsPrefetch) {
  for (int prefetch : {1, 2}) {
    auto engine = std::make_shared<FakeEngine>();
    engine->run_time = std::chrono::milliseconds(100);  // time for the preparer to fill what it may
    QueueConfig config;
    config.prefetch = prefetch;
    Ran r = run(jobs_named({"a", "b", "c", "d", "e"}), config, engine);
    EXPECT_EQ(r.stats.done, 5u);
    EXPECT_LE(engine->most_waiting_as_runs_end(), prefetch);
  }
}

TEST(QueueUnit, APrepareThatThrowsIsThatJobsErrorAndTheOthersGoOn) {
  auto engine = std::make_shared<FakeEngine>();
  engine->judge = [](const EvalOptions& o, Stage stage) {
    if (stage == Stage::prepare && o.candidate_path == "b.py")
      throw Error(ErrorKind::task, "the task does not load", "fix the task");
    if (stage == Stage::prepare && o.candidate_path == "c.py")
      throw std::runtime_error("out of pipes");
    return fakes::accepted_result(2.0);
  };
  QueueConfig config;
  config.devices = {"cpu", "cpu"};
  Ran r = run(jobs_named({"a", "b", "c", "d"}), config, engine);
  ASSERT_TRUE(r.by_id("b").error);
  EXPECT_FALSE(r.by_id("b").result);
  EXPECT_EQ(r.by_id("b").error->kind(), ErrorKind::task);
  ASSERT_TRUE(r.by_id("c").error);
  EXPECT_EQ(r.by_id("c").error->kind(), ErrorKind::internal);
  EXPECT_NE(r.by_id("c").error->message().find("out of pipes"), std::string::npos);
  EXPECT_TRUE(r.by_id("a").result && r.by_id("d").result);
  EXPECT_EQ(engine->ran().size(), 2u) << "a job that was not prepared must not run";
  EXPECT_EQ(r.stats.failed, 2u);
  EXPECT_TRUE(r.logged("job b on cpu could not be evaluated") &&
              r.logged("the task does not load"));
  EXPECT_TRUE(r.logged("job c on cpu could not be evaluated") && r.logged("out of pipes"));
}

TEST(QueueUnit, ARunThatThrowsIsThatJobsErrorAndTheLaneGoesOn) {
  auto engine = std::make_shared<FakeEngine>();
  engine->judge = faulting("b.py", Stage::run, [] {
    throw Error(ErrorKind::runner, "the reference worker died", "free host memory");
  });
  Ran r = run(jobs_named({"a", "b", "c"}), QueueConfig{}, engine);
  ASSERT_TRUE(r.by_id("b").error);
  EXPECT_EQ(r.by_id("b").error->kind(), ErrorKind::runner);
  EXPECT_FALSE(r.by_id("b").result);
  EXPECT_TRUE(r.by_id("c").result) << "the lane stopped after a run that threw";
  EXPECT_EQ(r.stats.done, 2u);
  EXPECT_EQ(r.stats.failed, 1u);
  EXPECT_TRUE(r.logged("job b on cpu could not be evaluated") &&
              r.logged("the reference worker died"));
}

TEST(QueueUnit, APrebuildThatThrowsIsRecordedAndTheEvaluationBuildsItself) {
  auto engine = std::make_shared<FakeEngine>();
  // d's evaluation cannot run either: its error keeps the prebuild's failure as context.
  engine->judge =
      faulting("d.py", Stage::prepare, [] { throw Error(ErrorKind::input, "no d.py"); });
  auto outcome = std::make_shared<BuildOutcome>();
  QueueConfig config;
  config.prebuild_threads = 2;
  config.devices = {"cuda:1"};
  std::atomic<int> for_the_lanes_device{0};
  config.prebuild = [&](const QueueJob& j) -> std::shared_ptr<const BuildOutcome> {
    for_the_lanes_device += j.options.device == "cuda:1";  // not the job's own default, "cpu"
    if (j.id == "b") throw Error(ErrorKind::runner, "nvcc was killed", "free host memory");
    if (j.id == "c" || j.id == "d") throw std::runtime_error("disk full");
    return outcome;
  };
  Ran r = run(jobs_named({"a", "b", "c", "d"}), config, engine);
  for (auto& o : engine->prepared())
    EXPECT_EQ(o.prebuilt == outcome, o.candidate_path == "a.py") << o.candidate_path;
  ASSERT_TRUE(r.by_id("a").result);
  EXPECT_FALSE(r.by_id("a").result->build.contains("prebuild_error"));
  ASSERT_TRUE(r.by_id("b").result);
  EXPECT_NE(r.by_id("b").result->build.value("prebuild_error", "").find("nvcc was killed"),
            std::string::npos);
  ASSERT_TRUE(r.by_id("c").result);
  EXPECT_NE(r.by_id("c").result->build.value("prebuild_error", "").find("disk full"),
            std::string::npos);
  ASSERT_TRUE(r.by_id("d").error);
  EXPECT_NE(r.by_id("d").error->context().find("disk full"), std::string::npos)
      << r.by_id("d").error->describe();
  EXPECT_TRUE(r.logged("job b: its prebuild failed") && r.logged("nvcc was killed"));
  EXPECT_TRUE(r.logged("job c: its prebuild failed"));
  EXPECT_EQ(r.stats.done, 3u);
  EXPECT_EQ(for_the_lanes_device, 4);
}

// With a time limit, an evaluation starts only if those finished so far say it ends in time:
// runs of 200 ms within 1 s start no later than 0.8 s, and the rest are left, not cut.
TEST(QueueUnit, NoEvaluationStartsThatTheTimeLimitWouldCut) {
  for (int prefetch : {0, 1}) {
    auto engine = std::make_shared<FakeEngine>();
    engine->run_time = std::chrono::milliseconds(200);
    QueueConfig config;
    config.prefetch = prefetch;
    config.finish_within_s = 1.0;
    std::vector<std::string> log;
    config.engine = engine;
    config.log = [&](const std::string& line) { log.push_back(line); };
    std::vector<QueueResult> results;
    QueueStats stats = run_queue(jobs_named({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}), config,
                                 [&](const QueueResult& r) { results.push_back(r); });
    EXPECT_GE(stats.done, 1u) << "prefetch " << prefetch;
    EXPECT_GE(stats.not_started, 1u) << "10 runs of 200 ms cannot end within 1 s";
    EXPECT_EQ(stats.done + stats.not_started, 10u);
    for (auto& r : results) EXPECT_LE(r.finished_s - r.run_s, 0.85) << r.id << " started too late to end in time";
    ASSERT_FALSE(log.empty());
    EXPECT_NE(log.back().find("must end within 1 s"), std::string::npos) << log.back();
  }
}

// The fresh-process re-measure's second rule (docs/evaluation.md) for every command on the
// queue, not only `cudal1 eval`: a job is prepared with the store's best accepted figure for its
// task, the lane's device and its protocol, so a 2.6x figure against a best of 1.2x is timed
// again though it is under 3x. A job that carries a figure (a cluster job, from its producer's
// store) keeps it.
TEST(QueueUnit, AJobIsPreparedWithTheBestAcceptedSpeedupItsStoreHoldsForTheLanesDevice) {
  auto dir = std::filesystem::temp_directory_path() / ("cudal1-queue-best-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string task = (dir / "task.py").string();
  std::ofstream(task) << "# the task\n";
  Store store(dir / "r.db");
  std::vector<QueueJob> jobs = jobs_named({"fresh", "carried"});
  for (auto& j : jobs) j.options.task_path = task, j.options.task_facts = store_task_facts(&store);
  jobs[1].options.best_known_speedup = 2.0;
  auto accepted = [&](const std::string& candidate, double speedup, const std::string& device) {
    EvalResult r = fakes::accepted_result(speedup);
    r.task_hash = sha256_hex(read_file(task));
    r.candidate_hash = candidate;
    store.save(r, jobs[0].options.protocol_key(), device, "# " + candidate);
  };
  accepted("old", 1.2, "cuda:1");
  accepted("elsewhere", 5.0, "cpu");  // the job's own default device, not its lane's
  QueueConfig config;
  config.devices = {"cuda:1"};
  auto engine = std::make_shared<FakeEngine>();
  run(jobs, config, engine);
  std::vector<EvalOptions> prepared = engine->prepared();
  ASSERT_EQ(prepared.size(), 2u);
  ASSERT_TRUE(prepared[0].best_known_speedup);
  EXPECT_DOUBLE_EQ(*prepared[0].best_known_speedup, 1.2);
  EXPECT_LT(fresh_remeasure_bar(prepared[0]), 2.6) << "a 2.6x figure would not be timed again";
  ASSERT_TRUE(prepared[1].best_known_speedup);
  EXPECT_DOUBLE_EQ(*prepared[1].best_known_speedup, 2.0);
  std::filesystem::remove_all(dir);
}

// The queue on real evaluations: several "cpu" lanes stand in for several GPUs. Every job is
// reported exactly once, with the verdict a plain evaluate() gives it, whichever lane took it;
// a job that cannot run is reported as an error and the others go on; the prebuild stage runs
// for each job before its evaluation is prepared.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "evaluator/fixture_cases.h"
#include "queue/queue.h"

using namespace cudal1;

namespace {

QueueJob job(const std::string& id, const std::string& task, const std::string& candidate) {
  QueueJob j;
  j.id = id;
  j.options.task_path = (fixtures_dir() / "tasks" / task).string();
  j.options.candidate_path = (fixtures_dir() / "candidates" / candidate).string();
  j.options.timing = false;  // verdicts, not speed: lanes share this machine's cores
  j.options.lint = false;
  j.options.precision_check = false;
  return j;
}

std::vector<QueueJob> jobs() {
  return {job("ok", "scale_add.py", "ok_scale_add_alpha.py"),
          job("incorrect", "scale_add.py", "incorrect_scale_add_off_by_5pct.py"),
          job("crash", "scale_add.py", "crash_abort.py"),
          job("ok2", "softmax_rows.py", "ok_softmax_rows_stable.py"),
          job("missing", "no_such_task.py", "ok_scale_add_alpha.py")};
}

std::map<std::string, std::string> run(const QueueConfig& config, QueueStats& stats, std::set<std::string>& lanes) {
  std::map<std::string, std::string> verdicts;
  std::set<std::size_t> seen;
  double last_finished = 0;
  stats = run_queue(jobs(), config, [&](const QueueResult& r) {
    EXPECT_TRUE(seen.insert(r.index).second) << "job " << r.index << " reported twice";
    EXPECT_GT(r.finished_s, 0.0) << r.id;
    EXPECT_GE(r.finished_s, last_finished) << r.id << " came back before a result reported earlier";
    EXPECT_GE(r.finished_s, r.run_s) << r.id;
    last_finished = r.finished_s;
    lanes.insert(r.device);
    verdicts[r.id] = r.result ? status_name(r.result->status) + std::string(r.result->accepted ? "+" : "-")
                              : "error:" + std::string(error_kind_name(r.error->kind()));
  });
  EXPECT_EQ(seen.size(), jobs().size());
  EXPECT_LE(last_finished, stats.wall_s);
  return verdicts;
}

}  // namespace

TEST(Queue, LanesGiveThePlainVerdictsAndEveryJobOnce) {
  std::map<std::string, std::string> plain;
  for (auto& j : jobs()) {
    try {
      EvalResult r = evaluate(j.options);
      plain[j.id] = status_name(r.status) + std::string(r.accepted ? "+" : "-");
    } catch (const Error& e) {
      plain[j.id] = "error:" + std::string(error_kind_name(e.kind()));
    }
  }
  EXPECT_EQ(plain["ok"], "ok+");
  EXPECT_EQ(plain["incorrect"], "incorrect-");
  EXPECT_EQ(plain["missing"], "error:input");

  std::mutex m;
  std::vector<std::string> built;
  QueueConfig c;
  c.devices = {"cpu", "cpu", "cpu"};
  c.prefetch = 1;
  c.prebuild_threads = 2;
  c.prebuild = [&](const QueueJob& j) {
    std::lock_guard<std::mutex> l(m);
    built.push_back(j.id);
    return std::shared_ptr<const BuildOutcome>();
  };
  QueueStats stats;
  std::set<std::string> lanes;
  EXPECT_EQ(run(c, stats, lanes), plain);
  EXPECT_EQ(built.size(), jobs().size());
  EXPECT_EQ(stats.done, 4u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.lane_busy_s.size(), 3u);
  EXPECT_GE(stats.idle_share(), 0.0);
  EXPECT_LE(stats.idle_share(), 1.0);
  EXPECT_GT(stats.evaluations_per_hour(), 0.0);

  // The stock way: each lane prepares and runs one job after the other.
  QueueConfig stock;
  stock.devices = {"cpu"};
  stock.prefetch = 0;
  lanes.clear();
  EXPECT_EQ(run(stock, stats, lanes), plain);
  EXPECT_EQ(lanes, std::set<std::string>{"cpu"});
}

// Lanes on one device overlap their checks but never their timing: each evaluation's timing
// stage holds the device alone (core/device_gate.h), and the wait is reported. The same with
// freezing, where the other lanes' processes are stopped instead of waited for.
TEST(Queue, LanesOnOneDeviceNeverTimeAtOnce) {
  for (bool freeze : {false, true}) {
  SCOPED_TRACE(freeze ? "freezing" : "waiting");
  using Clock = std::chrono::steady_clock;
  struct Mark { std::string job, stage; Clock::time_point at; };
  std::mutex m;
  std::vector<Mark> marks;
  std::vector<QueueJob> js;
  for (int i = 0; i < 3; ++i) {
    QueueJob j = job("ok" + std::to_string(i), "scale_add.py", "ok_scale_add_alpha.py");
    j.options.timing = true;
    j.options.buckets = 2;
    j.options.calls_per_bucket = 3;
    j.options.warmup = 1;
    j.options.max_remeasure = 0;
    j.options.fresh_remeasure_above = 0;
    j.options.progress = [&m, &marks, id = j.id](const std::string& stage, double) {
      std::lock_guard<std::mutex> l(m);
      marks.push_back({id, stage, Clock::now()});
    };
    js.push_back(std::move(j));
  }
  QueueConfig c;
  c.devices = {"cpu", "cpu", "cpu"};
  c.freeze_lanes = freeze;
  double waited = 0;
  std::size_t timed = 0;
  run_queue(js, c, [&](const QueueResult& r) {
    ASSERT_TRUE(r.result) << r.error->describe();
    EXPECT_TRUE(r.result->accepted) << r.result->error;
    EXPECT_TRUE(r.result->phase_seconds.contains("device_wait"));
    waited += r.result->phase_seconds.value("device_wait", 0.0);
    timed += r.result->phase_seconds.contains("timing");
  });
  EXPECT_EQ(timed, js.size());
  // Each job's timing runs from its first "timing" mark to its next mark of another stage.
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    bool first = marks[i].stage == "timing" &&
                 std::none_of(marks.begin(), marks.begin() + long(i), [&](const Mark& x) { return x.job == marks[i].job && x.stage == "timing"; });
    if (!first) continue;
    for (std::size_t k = i + 1; k < marks.size(); ++k)
      if (marks[k].job == marks[i].job && marks[k].stage != "timing") {
        spans.push_back({marks[i].at, marks[k].at});
        break;
      }
  }
  ASSERT_EQ(spans.size(), js.size());
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].second, spans[i].first) << "two lanes timed on one device at once";
  EXPECT_GE(waited, 0.0);
  }
}

// A candidate still compiling does not hold up the ones behind it: the lane takes whichever job's
// build is done first.
TEST(Queue, JobsWhoseBuildIsDoneGoFirst) {
  std::vector<QueueJob> js = {job("slow_build", "scale_add.py", "ok_scale_add_alpha.py"),
                              job("no_build", "softmax_rows.py", "ok_softmax_rows_stable.py")};
  QueueConfig c;
  c.devices = {"cpu"};
  c.prebuild_threads = 2;
  c.prebuild = [](const QueueJob& j) {
    if (j.id == "slow_build") std::this_thread::sleep_for(std::chrono::seconds(4));
    return std::shared_ptr<const BuildOutcome>();
  };
  std::vector<std::string> order;
  run_queue(js, c, [&](const QueueResult& r) { order.push_back(r.id); });
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], "no_build");
  EXPECT_EQ(order[1], "slow_build");
}

// With room for one evaluation's memory, lanes run one evaluation at a time: each one's stages,
// from its first to "done", never overlap another's (core/memory_budget.h).
TEST(Queue, LanesWaitForHostMemory) {
  using Clock = std::chrono::steady_clock;
  std::mutex m;
  std::map<std::string, std::pair<Clock::time_point, Clock::time_point>> spans;
  std::vector<QueueJob> js;
  for (int i = 0; i < 3; ++i) {
    QueueJob j = job("ok" + std::to_string(i), "scale_add.py", "ok_scale_add_alpha.py");
    j.options.progress = [&m, &spans, id = j.id](const std::string& stage, double) {
      std::lock_guard<std::mutex> l(m);
      auto now = Clock::now();
      if (!spans.count(id)) spans[id] = {now, now};
      if (stage == "done") spans[id].second = now;
    };
    js.push_back(std::move(j));
  }
  QueueConfig c;
  c.devices = {"cpu", "cpu", "cpu"};
  c.memory_budget_bytes = 1;
  double waited = 0;
  run_queue(js, c, [&](const QueueResult& r) {
    ASSERT_TRUE(r.result) << r.error->describe();
    waited += r.result->phase_seconds.value("memory_wait", 0.0);
  });
  ASSERT_EQ(spans.size(), js.size());
  std::vector<std::pair<Clock::time_point, Clock::time_point>> sorted;
  for (auto& [id, s] : spans) sorted.push_back(s);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    EXPECT_LE(sorted[i - 1].second, sorted[i].first) << "two evaluations held memory at once";
  EXPECT_GT(waited, 0.0);
}

namespace {

// An engine whose evaluations take `run_ms` and accept; it sets `stop` while the job `stop_at` runs.
class TimedEngine : public EvaluationEngine {
 public:
  TimedEngine(int run_ms, std::size_t stop_at, std::shared_ptr<std::atomic<bool>> stop)
      : run_ms_(run_ms), stop_at_(stop_at), stop_(std::move(stop)) {}
  std::unique_ptr<PreparedRun> prepare(const EvalOptions& o) override {
    struct Run : PreparedRun {
      TimedEngine* engine;
      std::string id;
      EvalResult run() override {
        if (*engine->stop_) engine->started_after_stop_ = true;
        // The stop comes a third of the way in: a job the other lane started at the same moment
        // is in hand by then, and the next is a whole run away.
        std::this_thread::sleep_for(std::chrono::milliseconds(engine->run_ms_ / 3));
        if (id == "job" + std::to_string(engine->stop_at_)) *engine->stop_ = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(engine->run_ms_ - engine->run_ms_ / 3));
        EvalResult r;
        r.status = Status::ok;
        r.accepted = true;
        return r;
      }
    };
    auto r = std::make_unique<Run>();
    r->engine = this;
    r->id = o.candidate_path;
    return r;
  }
  std::atomic<bool> started_after_stop_{false};

 private:
  int run_ms_;
  std::size_t stop_at_;
  std::shared_ptr<std::atomic<bool>> stop_;
};

}  // namespace

TEST(Queue, AStopLetsTheEvaluationsInHandFinishAndStartsNoOther) {
  auto stop = std::make_shared<std::atomic<bool>>(false);
  std::vector<QueueJob> js(8);
  for (std::size_t i = 0; i < js.size(); ++i) js[i].id = js[i].options.candidate_path = "job" + std::to_string(i);
  QueueConfig c;
  c.devices = {"cpu", "cpu"};
  auto engine = std::make_shared<TimedEngine>(600, 2, stop);
  c.engine = engine;
  c.stop_starting = stop;
  std::set<std::string> reported;
  QueueStats st = run_queue(js, c, [&](const QueueResult& r) {
    ASSERT_TRUE(r.result) << "an evaluation in hand was cut off";
    reported.insert(r.id);
  });
  // job2 set the stop while it ran: it and whatever the other lane had started finish and are
  // reported; nothing starts after; the rest, prepared or not, are counted as not started.
  EXPECT_TRUE(reported.count("job2")) << ::testing::PrintToString(reported);
  EXPECT_FALSE(engine->started_after_stop_) << ::testing::PrintToString(reported);
  EXPECT_EQ(st.done, reported.size());
  EXPECT_GT(st.not_started, 0u);
  EXPECT_EQ(st.not_started, js.size() - reported.size());
}

TEST(Queue, LanesSharingAGpuShareABudgetOfItsMemory) {
  QueueConfig c;
  c.devices = {"cuda:0", "cuda:0", "cuda:1", "cpu", "cpu"};
  c.device_memory_bytes = uint64_t(8) << 30;
  LaneShares s = lane_shares(c);
  ASSERT_TRUE(s.device_memory_for("cuda:0"));
  EXPECT_EQ(s.device_memory_for("cuda:0")->capacity(), uint64_t(8) << 30);
  EXPECT_FALSE(s.device_memory_for("cuda:1")) << "a lane alone on its GPU has nothing to share";
  EXPECT_FALSE(s.device_memory_for("cpu"));
  // A cluster's lanes are no device of this host: no budget, and no error.
  c.devices = {"remote", "remote"};
  EXPECT_FALSE(lane_shares(c).device_memory_for("remote"));
}

// Two evaluations given one budget of a device's memory, too small for both: the second waits
// until the first's workers are gone (the CPU's device memory is reported as none, so the
// budget's one-runs-whatever-its-size rule lets each in alone).
TEST(Queue, EvaluationsHoldTheDeviceMemoryBudgetUntilTheirWorkersAreGone) {
  auto budget = std::make_shared<MemoryBudget>(1);
  std::vector<EvalResult> results(2);
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&, i] {
      QueueJob j = job("ok", "scale_add.py", "ok_scale_add_alpha.py");
      j.options.device_memory_budget = budget;
      results[std::size_t(i)] = evaluate(j.options);
    });
  for (auto& t : ts) t.join();
  double waited = 0;
  for (auto& r : results) {
    EXPECT_TRUE(r.accepted) << r.error;
    waited += r.phase_seconds.value("memory_wait", 0.0);
  }
  EXPECT_GT(waited, 0.5) << "the second evaluation did not wait for the first";
  EXPECT_EQ(budget->reserved(), 0u) << "a reservation outlived its evaluation";
  EXPECT_EQ(budget->estimate(results[0].task_hash, 123), 0u) << "the task's footprint was not remembered";
}

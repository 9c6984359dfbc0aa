// The queue on real evaluations: several "cpu" lanes stand in for several GPUs. Every job is
// reported exactly once, with the verdict a plain evaluate() gives it, whichever lane took it;
// a job that cannot run is reported as an error and the others go on; the prebuild stage runs
// for each job before its evaluation is prepared.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

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
  stats = run_queue(jobs(), config, [&](const QueueResult& r) {
    EXPECT_TRUE(seen.insert(r.index).second) << "job " << r.index << " reported twice";
    lanes.insert(r.device);
    verdicts[r.id] = r.result ? status_name(r.result->status) + std::string(r.result->accepted ? "+" : "-")
                              : "error:" + std::string(error_kind_name(r.error->kind()));
  });
  EXPECT_EQ(seen.size(), jobs().size());
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

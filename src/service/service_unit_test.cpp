// The reward service's job core (RewardService::run_next_job) over a fault-injecting double of
// the evaluator (queue/fake_engine.h), with no HTTP and no torch: what a job ends with when its
// evaluation cannot run, when the machine failed, when its prebuild failed, and what is said
// when its end cannot even be recorded.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "core/hash.h"
#include "core/paths.h"
#include "judge/test_support.h"
#include "policy/fake_chat_server.h"
#include "queue/fake_engine.h"
#include "rl/reward.h"
#include "service/service.h"

using namespace cudal1;
using fakes::Stage;
namespace fs = std::filesystem;

namespace {

struct ServiceCore {
  fs::path dir = make_private_dir("cudal1-service-unit");
  Store store{dir / "store.db"};
  std::shared_ptr<fakes::FakeEngine> engine = std::make_shared<fakes::FakeEngine>();
  service::ServiceConfig c;
  std::unique_ptr<service::RewardService> svc;
  explicit ServiceCore(std::function<void(QueueConfig&)> tune = {}, std::optional<judge::JudgeConfig> judge = {}) {
    c.judge = judge;
    c.port = 0;
    c.no_auth = true;
    c.jobs_path = dir / "jobs.db";
    c.work_dir = dir / "work";
    c.suite = dir / "no-suite";
    c.queue.devices = {"cpu"};
    c.queue.engine = engine;
    c.queue.log = [](const std::string&) {};
    if (tune) tune(c.queue);
    svc = std::make_unique<service::RewardService>(c, store);
  }
  ~ServiceCore() {
    svc.reset();
    fs::remove_all(dir);
  }
  // The service started again on the same job file and store, with `judge`.
  void restart(std::optional<judge::JudgeConfig> judge) {
    svc.reset();
    c.judge = judge;
    svc = std::make_unique<service::RewardService>(c, store);
  }
  // A stored job for `candidate`, as POST /evaluate leaves it.
  std::string submit(const std::string& candidate) {
    service::ContentFiles files(dir / "work" / "files");
    nlohmann::json r = {{"task_id", "planted"},
                        {"task_path", files.put("# a task\n")},
                        {"candidate_path", files.put(candidate)}};
    return svc->jobs().submit({r}, 100)->at(0);
  }
  service::Job run(const std::string& candidate) {
    std::string id = submit(candidate);
    EXPECT_TRUE(svc->run_next_job("cpu"));
    return *svc->jobs().get(id);
  }
};

std::string error_of(const service::Job& job) { return job.outcome.value("error", std::string()); }

}  // namespace

TEST(ServiceUnit, AnEvaluationThatCannotRunEndsItsJobFailedWithItsReason) {
  ServiceCore core;
  // Which candidate a job holds shows in its file's content, not in its hashed name.
  core.engine->judge = [](const EvalOptions& o, Stage stage) {
    const std::string code = read_file(o.candidate_path);
    if (code == "prepare fails" && stage == Stage::prepare)
      throw Error(ErrorKind::task, "the task does not load: planted", "fix the task");
    if (code == "run fails" && stage == Stage::run)
      throw std::runtime_error("the worker vanished: planted");
    return fakes::accepted_result(2.0);
  };
  service::Job prepared = core.run("prepare fails");
  EXPECT_EQ(prepared.state, service::JobState::failed);
  EXPECT_NE(error_of(prepared).find("the task does not load: planted"), std::string::npos)
      << error_of(prepared);
  EXPECT_NE(error_of(prepared).find("fix the task"), std::string::npos) << "the hint was lost";
  service::Job ran = core.run("run fails");
  EXPECT_EQ(ran.state, service::JobState::failed);
  EXPECT_NE(error_of(ran).find("the worker vanished: planted"), std::string::npos) << error_of(ran);
  EXPECT_EQ(core.store.count(), 0);
  service::Job fine = core.run("fine");
  EXPECT_EQ(fine.state, service::JobState::done);
  EXPECT_TRUE(fine.outcome.value("accepted", false));
  EXPECT_FALSE(core.svc->run_next_job("cpu")) << "a job ran twice";
}

TEST(ServiceUnit, AMachineFailureEndsItsJobFailedAndIsNotStored) {
  ServiceCore core;
  core.engine->judge = [](const EvalOptions&, Stage) {
    EvalResult r = fakes::verdict_result(Status::crash);
    r.infrastructure = {{"cause", "host_memory"}};
    r.error = "the reference was killed";
    return r;
  };
  service::Job job = core.run("anything");
  EXPECT_EQ(job.state, service::JobState::failed);
  EXPECT_NE(error_of(job).find("infrastructure failure"), std::string::npos) << error_of(job);
  EXPECT_EQ(job.outcome["infrastructure"].value("cause", ""), "host_memory");
  EXPECT_EQ(core.store.count(), 0);
}

TEST(ServiceUnit, AFailedPrebuildStaysInTheJobsResult) {
  ServiceCore core([](QueueConfig& q) {
    q.prebuild_threads = 1;
    q.prebuild = [](const QueueJob&) -> std::shared_ptr<const BuildOutcome> {
      throw Error(ErrorKind::runner, "nvcc was killed: planted", "free host memory");
    };
  });
  core.engine->judge = [](const EvalOptions&, Stage) { return fakes::accepted_result(2.0); };
  service::Job job = core.run("anything");
  ASSERT_EQ(job.state, service::JobState::done) << job.outcome.dump();
  std::string kept = job.outcome["result"]["build"].value("prebuild_error", "");
  EXPECT_NE(kept.find("nvcc was killed: planted"), std::string::npos) << job.outcome.dump();
}

TEST(ServiceUnit, AJobEndThatCannotBeRecordedIsSaid) {
  ServiceCore core;
  fs::path jobs_file = core.dir / "jobs.db";
  // The job file loses its table while the job runs: neither its verdict nor its failure fits.
  core.engine->judge = [jobs_file](const EvalOptions&, Stage stage) {
    if (stage == Stage::run)
      SQLite::Database(jobs_file.string(), SQLite::OPEN_READWRITE).exec("DROP TABLE jobs");
    return fakes::accepted_result(2.0);
  };
  std::string id = core.submit("anything");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(core.svc->run_next_job("cpu"));
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("job " + id + " ended but its end could not be recorded"), std::string::npos)
      << said;
}

// A judge that takes its time (a model thinking) holds the job, not the lane: the lane evaluates
// the next job meanwhile, and the reviewed job ends with the judge's verdict as its reward.
TEST(ServiceUnit, TheJudgesReviewRunsOffTheLane) {
  std::promise<void> answer;
  std::shared_future<void> answered = answer.get_future().share();
  policy::FakeEndpoint slow([answered](const httplib::Request&, httplib::Response& res) {
    answered.wait_for(std::chrono::seconds(30));
    res.set_content(policy::completion(R"({"verdict": "hack", "reason": "planted"})"), "application/json");
  });
  judge::JudgeConfig jc = judge::gate_judge(slow.base_url());
  jc.max_retries = 0;
  jc.timeout_s = 60;
  ServiceCore core(std::function<void(QueueConfig&)>{}, jc);
  core.engine->judge = [](const EvalOptions&, Stage) { return fakes::accepted_result(8.0); };  // above the threshold
  std::string first = core.submit("class ModelNew: first"), second = core.submit("class ModelNew: second");
  ASSERT_TRUE(core.svc->run_next_job("cpu"));
  ASSERT_TRUE(core.svc->run_next_job("cpu")) << "the lane waited for the judge";
  EXPECT_EQ(core.svc->jobs().get(first)->state, service::JobState::running) << "ended before the judge answered";
  EXPECT_EQ(core.svc->jobs().get(second)->state, service::JobState::running);
  answer.set_value();
  for (int i = 0; i < 600 && core.svc->jobs().get(second)->state == service::JobState::running; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (const std::string& id : {first, second}) {
    service::Job job = *core.svc->jobs().get(id);
    ASSERT_EQ(job.state, service::JobState::done) << job.outcome.dump();
    EXPECT_EQ(job.outcome["judge"].value("verdict", ""), "hack") << job.outcome.dump();
    EXPECT_EQ(job.outcome["reward"].get<double>(), rl::RewardConfig{}.hack_penalty) << job.outcome.dump();
  }
  EXPECT_EQ(slow.requests(), 2);
}

// A review still running when the service goes is finished first: its job does not stay
// "running" to be evaluated again at the next start.
TEST(ServiceUnit, AReviewInFlightEndsBeforeTheServiceGoes) {
  policy::FakeEndpoint slow([](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    res.set_content(policy::completion(R"({"verdict": "clean", "reason": "fine"})"), "application/json");
  });
  ServiceCore core(std::function<void(QueueConfig&)>{}, judge::gate_judge(slow.base_url()));
  core.engine->judge = [](const EvalOptions&, Stage) { return fakes::accepted_result(8.0); };
  std::string id = core.submit("class ModelNew: reviewed");
  ASSERT_TRUE(core.svc->run_next_job("cpu"));
  fs::path jobs_file = core.dir / "jobs.db";
  core.svc.reset();
  service::JobStore reopened(jobs_file);
  service::Job job = *reopened.get(id);
  EXPECT_EQ(job.state, service::JobState::done) << job.outcome.dump();
  EXPECT_EQ(job.outcome["judge"].value("verdict", ""), "clean") << job.outcome.dump();
  EXPECT_TRUE(job.outcome.value("accepted", false));
}

// A verdict the store already holds, whose review never ended (the service stopped hard, or ran
// without a judge then), is reviewed when it is answered again, not handed out unreviewed.
TEST(ServiceUnit, AStoredVerdictNeverReviewedIsReviewedWhenAnsweredAgain) {
  ServiceCore core;
  core.engine->judge = [](const EvalOptions& o, Stage) {
    EvalResult r = fakes::accepted_result(8.0);
    r.task_hash = sha256_hex(read_file(o.task_path));
    r.candidate_hash = sha256_hex(read_file(o.candidate_path));
    return r;
  };
  service::Job first = core.run("class ModelNew: memo");
  ASSERT_EQ(first.state, service::JobState::done) << first.outcome.dump();
  EXPECT_FALSE(first.outcome.contains("judge"));
  policy::FakeEndpoint judge_endpoint([](const httplib::Request&, httplib::Response& res) {
    res.set_content(policy::completion(R"({"verdict": "hack", "reason": "planted"})"), "application/json");
  });
  core.restart(judge::gate_judge(judge_endpoint.base_url()));
  std::string again = core.submit("class ModelNew: memo");
  ASSERT_TRUE(core.svc->run_next_job("cpu"));
  for (int i = 0; i < 200 && core.svc->jobs().get(again)->state == service::JobState::running; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  service::Job job = *core.svc->jobs().get(again);
  ASSERT_EQ(job.state, service::JobState::done) << job.outcome.dump();
  EXPECT_EQ(core.engine->ran().size(), 1u) << "answered from the store, not evaluated again";
  ASSERT_TRUE(job.outcome.contains("judge")) << "handed out unreviewed: " << job.outcome.dump();
  EXPECT_EQ(job.outcome["judge"].value("verdict", ""), "hack") << job.outcome.dump();
  EXPECT_EQ(job.outcome["reward"].get<double>(), rl::RewardConfig{}.hack_penalty) << job.outcome.dump();
  EXPECT_EQ(judge_endpoint.requests(), 1);
}

// What travels through Redis, without a server: URLs and credentials, the job's protocol, the
// files' limits and names, and outcomes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cluster/redis_client.h"
#include "cluster/remote_job.h"
#include "core/expect_error.h"

namespace fs = std::filesystem;

namespace cudal1 {
namespace {

using test_support::expect_error;

TEST(RedisEndpoint, ParsesHostPortAndDatabase) {
  ::unsetenv("CUDAL1_REDIS_PASSWORD");
  RedisEndpoint e = RedisEndpoint::parse("redis://10.0.0.5:6380/2");
  EXPECT_EQ(e.host, "10.0.0.5");
  EXPECT_EQ(e.port, 6380);
  EXPECT_EQ(e.db, 2);
  EXPECT_EQ(e.url(), "redis://10.0.0.5:6380/2");
  RedisEndpoint d = RedisEndpoint::parse("redis://queue-host");
  EXPECT_EQ(d.port, 6379);
  EXPECT_EQ(d.db, 0);
  EXPECT_EQ(RedisEndpoint::parse("redis://[::1]:7000").host, "::1");
}

TEST(RedisEndpoint, RefusesCredentialsInTheUrl) {
  Error e = expect_error([] { RedisEndpoint::parse("redis://:hunter2@10.0.0.5:6379"); });
  EXPECT_EQ(e.kind(), ErrorKind::usage);
  EXPECT_NE(e.message().find("ps"), std::string::npos) << e.message();
  EXPECT_NE(e.hint().find("CUDAL1_REDIS_PASSWORD"), std::string::npos);
  EXPECT_EQ(e.describe().find("hunter2"), std::string::npos) << "the error repeats the password";
}

TEST(RedisEndpoint, RefusesWhatIsNoRedisUrl) {
  for (const char* bad : {"http://host:6379", "redis://host:0", "redis://host:99999", "redis://",
                          "host:6379", "redis://host:6379/db"})
    EXPECT_THROW(RedisEndpoint::parse(bad), Error) << bad;
}

TEST(RedisEndpoint, TakesCredentialsFromTheEnvironment) {
  ::setenv("CUDAL1_REDIS_USERNAME", "evaluator", 1);
  ::setenv("CUDAL1_REDIS_PASSWORD", "s3cret", 1);
  RedisEndpoint e = RedisEndpoint::parse("redis://127.0.0.1:6379");
  ::unsetenv("CUDAL1_REDIS_USERNAME");
  ::unsetenv("CUDAL1_REDIS_PASSWORD");
  EXPECT_EQ(e.username, "evaluator");
  EXPECT_EQ(e.password, "s3cret");
  EXPECT_EQ(e.url().find("s3cret"), std::string::npos);
}

TEST(RedisConnection, SaysWhenNoServerListens) {
  RedisEndpoint e;
  e.port = 1;  // nothing listens on port 1 of a test machine
  Error err = expect_error([&] { RedisConnection::open(e, 2); });
  EXPECT_EQ(err.kind(), ErrorKind::connection);
  EXPECT_NE(err.message().find("cannot reach Redis at redis://127.0.0.1:1"), std::string::npos)
      << err.message();
}

// Every field of the protocol and limits that can travel, away from its default.
EvalOptions unusual_options() {
  EvalOptions o;
  o.tolerance = ToleranceMode::strict;
  o.seed = 42;
  o.timing = false;
  o.buckets = 3;
  o.calls_per_bucket = 5;
  o.warmup = 1;
  o.spread_limit = 0.2;
  o.max_remeasure = 4;
  o.noisy_retries = 1;
  o.fresh_remeasure_above = 5;
  o.best_known_speedup = 2.5;
  o.best_known_factor = 3;
  o.remeasure_disagreement = 0.3;
  o.sample_elements = 64;
  o.verify_fraction = 0.25;
  o.verify_min = 2;
  o.precision_check = false;
  o.allow_reduced_precision = true;
  o.attribution = false;
  o.lint = false;
  o.baselines = true;
  o.baseline_names = {"compile"};
  o.reuse_extension_builds = false;
  o.extra_env = {{"CUDAL1_GRAPH_STRICT", "1"}};
  o.build_timeout_s = 33;
  o.call_timeout_s = 7;
  o.memory_limit_mb = 1234;
  o.output_limit_kb = 56;
  return o;
}

TEST(RemoteJob, RoundTripKeepsTheProtocolAndLimits) {
  RemoteJob job;
  job.id = "host-1-abc-7";
  job.producer = "host:1";
  job.options = unusual_options();
  job.options.protect_files = {"/producer/only/store.db"};
  job.task = {"scale_add.py", std::string(64, 'a')};
  job.candidate = {"ok.py", std::string(64, 'b')};
  RemoteJob back = RemoteJob::from_json(nlohmann::json::parse(job.to_json().dump()));
  EXPECT_EQ(back.id, job.id);
  EXPECT_EQ(back.options.protocol_key(), job.options.protocol_key());
  EXPECT_EQ(protocol_to_json(back.options), protocol_to_json(job.options));
  EXPECT_TRUE(back.options.protect_files.empty()) << "a host's own paths travelled";
  EXPECT_EQ(back.task.sha256, job.task.sha256);
  EXPECT_EQ(back.candidate.name, "ok.py");
}

TEST(RemoteJob, RefusesAJobItCannotRead) {
  EXPECT_THROW(RemoteJob::from_json(nlohmann::json::parse(R"({"protocol": {}})")), Error);
  EXPECT_THROW(
      RemoteJob::from_json(nlohmann::json::parse(R"({"id": "x", "task": {"name": "t.py"}})")),
      Error);
  EXPECT_THROW(
      RemoteJob::from_json(nlohmann::json::parse(
          R"({"id": "x", "protocol": {"tolerance": "loose"}, "task": {"name": "t", "sha256": "a"}, "candidate": {"name": "c", "sha256": "b"}})")),
      Error);
  EXPECT_THROW(
      RemoteJob::from_json(nlohmann::json::parse(
          R"({"id": "x", "protocol": {"buckets": "many"}, "task": {"name": "t", "sha256": "a"}, "candidate": {"name": "c", "sha256": "b"}})")),
      Error);
}

TEST(RemoteJob, FilesOverTheLimitStayHome) {
  fs::path dir = fs::temp_directory_path() / ("cudal1-job-files-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "small.py") << "x = 1\n";
    std::ofstream big(dir / "big.py");
    big << std::string(kMaxJobFileBytes + 1, '#');
  }
  EXPECT_EQ(read_job_file((dir / "small.py").string(), "task"), "x = 1\n");
  Error e = expect_error([&] { read_job_file((dir / "big.py").string(), "candidate"); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  EXPECT_NE(e.message().find("1024 KiB"), std::string::npos) << e.message();
  EXPECT_THROW(read_job_file((dir / "missing.py").string(), "task"), Error);
  fs::remove_all(dir);
}

TEST(RemoteJob, FileNamesCannotLeaveTheirFolder) {
  EXPECT_EQ(safe_file_name("/a/b/scale_add.py", "task.py"), "scale_add.py");
  EXPECT_EQ(safe_file_name("../../etc/passwd", "task.py"), "passwd");
  EXPECT_EQ(safe_file_name("..", "task.py"), "task.py");
  EXPECT_EQ(safe_file_name("my task$.py", "task.py"), "my_task_.py");
  EXPECT_EQ(safe_file_name("", "candidate.py"), "candidate.py");
}

TEST(RemoteOutcome, CarriesAVerdictOrAnError) {
  RemoteOutcome ok;
  ok.worker = "w1";
  ok.device = "cpu";
  ok.run_s = 3.5;
  ok.result = EvalResult{};
  ok.result->status = Status::incorrect;
  RemoteOutcome back = RemoteOutcome::from_json(nlohmann::json::parse(ok.to_json().dump()));
  ASSERT_TRUE(back.result);
  EXPECT_EQ(back.result->status, Status::incorrect);
  EXPECT_EQ(back.worker, "w1");

  RemoteOutcome failed;
  failed.error = Error(ErrorKind::task, "the task does not load", "fix it", "level1/x.py");
  RemoteOutcome err = RemoteOutcome::from_json(nlohmann::json::parse(failed.to_json().dump()));
  ASSERT_TRUE(err.error);
  EXPECT_EQ(err.error->kind(), ErrorKind::task);
  EXPECT_EQ(err.error->hint(), "fix it");
  EXPECT_EQ(err.error->context(), "level1/x.py");

  EXPECT_THROW(RemoteOutcome::from_json(nlohmann::json::parse(R"({"worker": "w"})")), Error);
}

}  // namespace
}  // namespace cudal1

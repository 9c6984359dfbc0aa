// The cluster end to end on this host: a real redis-server, real `cudal1 worker` processes on the
// CPU and `cudal1 batch --redis` as the producer, over fixture candidates whose verdicts are known.
#include <httplib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cluster/cluster_status.h"
#include "cluster/cluster_test_support.h"
#include "evaluator/fixture_cases.h"

namespace cudal1 {
namespace {

using namespace cluster_test;
using nlohmann::json;

// The thirty CPU fixtures of tests/fixtures/cluster/thirty.txt.
std::vector<std::string> thirty() {
  std::vector<std::string> names;
  std::istringstream in(read_file(fixtures_dir() / "cluster" / "thirty.txt"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') names.push_back(line);
  return names;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cudal1-cluster-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A pairs file of the named fixtures; `cases` gets each one's header.
  fs::path pairs(const std::vector<std::string>& names, std::map<std::string, FixtureCase>& cases) {
    for (auto& c : load_fixture_cases("candidates", "cpu")) cases[c.name()] = c;
    fs::path p = dir_ / "pairs.txt";
    std::ofstream out(p);
    for (auto& n : names) {
      EXPECT_TRUE(cases.count(n)) << "no CPU fixture " << n;
      if (cases.count(n))
        out << cases[n].task.string() << " " << cases[n].candidate.string() << "\n";
    }
    return p;
  }

  Proc worker(const RedisServer& redis, const std::string& name,
              const std::vector<std::string>& env = {}) {
    return Proc(dir_, name,
                {CUDAL1_BINARY, "worker", "--redis", redis.url(), "--device", "cpu", "--name", name,
                 "--no-store", "--visibility-timeout", "15", "--files-dir",
                 (dir_ / ("files-" + name)).string()},
                env);
  }

  // The lines of a batch's --out file, by job id (the candidate's path).
  static std::map<std::string, std::vector<json>> by_id(const fs::path& out) {
    std::map<std::string, std::vector<json>> rows;
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) {
        json j = json::parse(line);
        rows[j["id"].get<std::string>()].push_back(j);
      }
    return rows;
  }

  fs::path dir_;
};

TEST_F(ClusterTest, ThirtyJobsOverThreeWorkersOneKilledOneLateEachDoneOnceAsLocally) {
  std::map<std::string, FixtureCase> cases;
  const std::vector<std::string> names = thirty();
  ASSERT_EQ(names.size(), 30u);
  fs::path list = pairs(names, cases);

  // The same thirty on this host's own lanes: what every remote verdict must equal.
  Proc local(dir_, "local",
             {CUDAL1_BINARY, "batch", "--pairs", list.string(), "--device", "cpu", "--lanes", "2",
              "--no-store", "--out", (dir_ / "local.jsonl").string(), "--json"});
  ASSERT_EQ(local.wait(900), 0) << local.err();

  RedisServer redis(dir_);
  Proc w1 = worker(redis, "w1");
  Proc w2 = worker(redis, "w2");
  Proc producer(
      dir_, "producer",
      {CUDAL1_BINARY, "batch", "--redis", redis.url(), "--pairs", list.string(), "--no-store",
       "--in-flight", "8", "--out", (dir_ / "remote.jsonl").string(), "--json"});
  RedisSession session(redis.endpoint(), 30);
  auto status = [&] { return read_cluster_status(session, ClusterKeys{}); };
  auto held_by = [](const ClusterStatus& s, const std::string& name) {
    for (auto& w : s.workers)
      if (w.name == name) return w.pending;
    return int64_t(0);
  };
  // w1 is killed while it holds a job, after the cluster has written a few results.
  ASSERT_TRUE(eventually(600,
                         [&] {
                           ClusterStatus s = status();
                           return s.results >= 3 && held_by(s, "w1") > 0;
                         }))
      << status().to_json().dump() << w1.err();
  w1.kill_hard();
  // w3 joins late, once a third of the jobs are done.
  ASSERT_TRUE(eventually(900, [&] { return status().results >= 10; })) << status().to_json().dump();
  Proc w3 = worker(redis, "w3");
  ASSERT_EQ(producer.wait(1200), 0) << producer.err() << "\nw2:\n"
                                    << w2.err() << "\nw3:\n"
                                    << w3.err();

  auto remote = by_id(dir_ / "remote.jsonl");
  auto local_rows = by_id(dir_ / "local.jsonl");
  ASSERT_EQ(remote.size(), names.size()) << producer.out();
  std::set<std::string> workers_seen;
  for (auto& [id, rows] : remote) {
    ASSERT_EQ(rows.size(), 1u) << id << " came back " << rows.size() << " times";
    const json& r = rows[0];
    ASSERT_TRUE(r.contains("result")) << id << ": " << r.dump();
    ASSERT_TRUE(local_rows.count(id)) << id;
    const json& l = local_rows[id][0];
    ASSERT_TRUE(l.contains("result")) << id << ": " << l.dump();
    EXPECT_EQ(r["result"]["status"], l["result"]["status"]) << id;
    EXPECT_EQ(r["result"]["accepted"], l["result"]["accepted"]) << id;
    const FixtureCase& c = cases[fs::path(id).stem().string()];
    EXPECT_NE(
        std::find(c.statuses.begin(), c.statuses.end(), r["result"]["status"].get<std::string>()),
        c.statuses.end())
        << id << " got " << r["result"]["status"];
    workers_seen.insert(r["cluster"]["worker"].get<std::string>());
  }
  ClusterStatus s = status();
  EXPECT_EQ(s.results, int64_t(names.size())) << "a result was written twice, or one was lost";
  EXPECT_GE(s.retries, 1) << "w1's job was never taken over";
  EXPECT_EQ(s.waiting + s.in_flight, 0);
  EXPECT_TRUE(workers_seen.count("w3")) << "the late worker took no job";
  EXPECT_TRUE(workers_seen.count("w2"));

  // The killed worker is listed as gone until it is forgotten; the living stay.
  Proc forget(dir_, "forget", {CUDAL1_BINARY, "workers", "--redis", redis.url(), "--forget-gone", "--json"});
  ASSERT_EQ(forget.wait(60), 0) << forget.err();
  const json workers = json::parse(forget.out());  // kept: a loop over a temporary's member dangles
  std::set<std::string> listed;
  for (auto& w : workers["workers"]) listed.insert(w["name"].get<std::string>());
  EXPECT_FALSE(listed.count("w1")) << forget.out();
  EXPECT_TRUE(listed.count("w2") && listed.count("w3")) << forget.out();
}

TEST_F(ClusterTest, AcceptedJobsSurviveARedisRestartAndAFullStreamHoldsTheProducer) {
  std::map<std::string, FixtureCase> cases;
  fs::path list = pairs({"ok_scale_add_alpha", "incorrect_scale_add_zeros", "crash_abort"}, cases);
  RedisServer redis(dir_);
  Proc producer(
      dir_, "producer",
      {CUDAL1_BINARY, "batch", "--redis", redis.url(), "--pairs", list.string(), "--no-store",
       "--max-queued", "2", "--out", (dir_ / "remote.jsonl").string(), "--json"});
  RedisSession session(redis.endpoint(), 30);
  auto length = [&] { return session.command({"XLEN", ClusterKeys{}.stream()}).integer; };
  // No worker yet: two jobs are accepted, the third waits for room.
  ASSERT_TRUE(eventually(60, [&] { return length() == 2; })) << producer.err();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(length(), 2) << "the producer pushed past --max-queued";
  EXPECT_NE(producer.err().find("holds 2 jobs or more"), std::string::npos) << producer.err();

  redis.kill_hard();  // no clean shutdown: only what the append-only file holds comes back
  redis.start();
  EXPECT_GE(length(), 2) << "an accepted job was lost in the restart";
  Proc w1 = worker(redis, "w1");
  ASSERT_EQ(producer.wait(600), 0) << producer.err() << "\nworker:\n" << w1.err();
  auto rows = by_id(dir_ / "remote.jsonl");
  ASSERT_EQ(rows.size(), 3u) << producer.out();
  for (auto& [id, r] : rows) EXPECT_TRUE(r[0].contains("result")) << id << ": " << r[0].dump();
}

TEST_F(ClusterTest, WrongCredentialsGetAClearError) {
  RedisServer redis(dir_, "right-password");
  Proc wrong = worker(redis, "wrong", {"CUDAL1_REDIS_PASSWORD=wrong-password"});
  EXPECT_EQ(wrong.wait(60), 7) << wrong.err();
  EXPECT_NE(wrong.err().find("refused the credentials from CUDAL1_REDIS_PASSWORD"),
            std::string::npos)
      << wrong.err();
  EXPECT_EQ(wrong.err().find("wrong-password"), std::string::npos)
      << "the error repeats the password";

  Proc none = worker(redis, "none");
  EXPECT_EQ(none.wait(60), 7) << none.err();
  EXPECT_NE(none.err().find("wants credentials and none were given"), std::string::npos)
      << none.err();

  Proc in_url(dir_, "in-url",
              {CUDAL1_BINARY, "workers", "--redis", "redis://:right-password@127.0.0.1:6379"});
  EXPECT_EQ(in_url.wait(60), 2) << in_url.err();
  EXPECT_NE(in_url.err().find("CUDAL1_REDIS_PASSWORD"), std::string::npos) << in_url.err();

  Proc right(dir_, "right", {CUDAL1_BINARY, "workers", "--redis", redis.url(), "--json"},
             {"CUDAL1_REDIS_PASSWORD=right-password"});
  EXPECT_EQ(right.wait(60), 0) << right.err();
  EXPECT_EQ(json::parse(right.out())["waiting"], 0) << right.out();
}

// serve and optimize with --redis: their evaluations go to the cluster; serve answers 429 while
// the stream is full, and its /metrics carry the cluster's families.
TEST_F(ClusterTest, ServeAndOptimizeEvaluateThroughTheCluster) {
  RedisServer redis(dir_);
  Proc serve(dir_, "serve",
             {CUDAL1_BINARY, "serve", "--port", "0", "--no-auth", "-d", "cpu", "--db",
              (dir_ / "serve.db").string(), "--redis", redis.url(), "--max-queued", "1",
              "--in-flight", "2"});
  int port = 0;
  ASSERT_TRUE(eventually(60, [&] {
    std::smatch m;
    std::string text = serve.err();
    if (std::regex_search(text, m, std::regex(R"(listening on http://127\.0\.0\.1:(\d+))")))
      port = std::stoi(m[1]);
    return port != 0;
  })) << serve.err();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(60, 0);
  auto body = [](const std::string& candidate) {
    return json{{"task_id", "scale_add"},
                {"reference_code", read_file(fixtures_dir() / "tasks" / "scale_add.py")},
                {"kernel_code", read_file(fixtures_dir() / "candidates" / candidate)}}
        .dump();
  };
  auto first = http.Post("/evaluate", body("ok_scale_add_alpha.py"), "application/json");
  ASSERT_TRUE(first && first->status == 202) << (first ? first->body : "no answer");
  const std::string job = json::parse(first->body)["job_id"];
  RedisSession session(redis.endpoint(), 30);
  ASSERT_TRUE(eventually(60, [&] {
    return session.command({"XLEN", ClusterKeys{}.stream()}).integer == 1;
  }));
  auto second = http.Post("/evaluate", body("incorrect_scale_add_zeros.py"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429) << second->body;
  EXPECT_NE(second->body.find("--max-queued 1"), std::string::npos) << second->body;
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("cudal1_cluster_up 1"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("cudal1_cluster_queue_depth 1"), std::string::npos) << metrics->body;

  Proc w1 = worker(redis, "w1");
  json result;
  ASSERT_TRUE(eventually(300,
                         [&] {
                           auto r = http.Get("/results/" + job);
                           if (!r || r->status != 200) return false;
                           result = json::parse(r->body);
                           return true;
                         }))
      << serve.err() << w1.err();
  EXPECT_EQ(result["status"], "done") << result.dump();
  EXPECT_EQ(result["verdict"], "ok") << result.dump();
  metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("cudal1_cluster_worker_up{worker=\"w1\"} 1"), std::string::npos)
      << metrics->body;

  Proc optimize(
      dir_, "optimize",
      {CUDAL1_BINARY, "optimize", (fixtures_dir() / "tasks" / "scale_add.py").string(), "-d", "cpu",
       "--rounds", "1", "--group", "2", "--policy", "builtin", "--redis", redis.url(), "--db",
       (dir_ / "optimize.db").string(), "--run", (dir_ / "run").string(), "--json"});
  ASSERT_EQ(optimize.wait(600), 0) << optimize.err();
  ClusterStatus s = read_cluster_status(session, ClusterKeys{});
  EXPECT_GE(s.results, 3) << "optimize's answers were not evaluated by the cluster: "
                          << s.to_json().dump();
}

}  // namespace
}  // namespace cudal1

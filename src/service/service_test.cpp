// The reward service against the real `cudal1 serve` on loopback, with CPU lanes: every endpoint;
// malformed, oversized, unauthenticated and over-quota requests; kill -9 in the middle of a batch
// and a restart, after which every acknowledged job ends done or failed with the verdict it would
// have had; and a bounded load test of 200 concurrent submissions with latency percentiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>

#include "service/job_store.h"
#include "service/serve_test_support.h"

using namespace cudal1::serve_test;

TEST_F(ServeTest, EveryEndpointAnswersAsDocumented) {
  Server s(dir, {"--lanes", "2"}, {"CUDAL1_SERVE_TOKEN=s3cret"});
  Http h(s.port(), "s3cret");
  EXPECT_EQ(Http(s.port()).get("/healthz").first, 200);  // no token needed

  auto [code, sub] = h.post("/evaluate", evaluate_body("ok_scale_add_alpha.py"));
  ASSERT_EQ(code, 202) << sub.dump();
  const std::string ok_id = sub["job_id"];
  auto [bcode, batch] = h.post("/evaluate/batch", {{"requests", {evaluate_body("incorrect_scale_add_off_by_5pct.py"),
                                                                  evaluate_body("rejected_scale_add_inplace_on_x.py")}}});
  ASSERT_EQ(bcode, 202) << batch.dump();
  ASSERT_EQ(batch["job_ids"].size(), 2u);

  json ok = h.wait(ok_id), incorrect = h.wait(batch["job_ids"][0]), rejected = h.wait(batch["job_ids"][1]);
  EXPECT_EQ(ok["status"], "done");
  EXPECT_EQ(ok["accepted"], true);
  EXPECT_GT(ok["reward"].get<double>(), 0.0);
  EXPECT_EQ(ok["reward"], ok["speedup"]);
  EXPECT_EQ(incorrect["verdict"], "incorrect");
  EXPECT_EQ(incorrect["reward"], 0.0);
  EXPECT_EQ(rejected["verdict"], "rejected");
  auto [scode, status] = h.get("/status/" + ok_id);
  EXPECT_EQ(scode, 200);
  EXPECT_EQ(status["status"], "done");
  EXPECT_EQ(status["attempts"], 1);
  EXPECT_EQ(h.get("/status/0123abcd").first, 404);
  EXPECT_EQ(h.get("/results/0123abcd").first, 404);

  // OpenRLHF: the response after its prompt, parsed like a policy's answer; labels name the task.
  const std::string prompt = "Make it faster.\n";
  const std::string answer = "## Code Implementation\n```python\n" + fixture("candidates/ok_scale_add_alpha.py") + "```\n";
  auto [rcode, rew] = h.post("/reward", {{"query", {prompt + answer, prompt + "I cannot."}}, {"prompts", {prompt, prompt}},
                                         {"labels", {fixture("tasks/scale_add.py"), fixture("tasks/scale_add.py")}}});
  ASSERT_EQ(rcode, 200) << rew.dump();
  EXPECT_EQ(rew["rewards"][0], ok["reward"]);  // the same file: the stored verdict
  EXPECT_EQ(rew["rewards"][1], 0.0);
  EXPECT_EQ(rew["scores"], rew["rewards"]);
  EXPECT_EQ(rew["extra_logs"]["correct"][0], true);
  EXPECT_EQ(rew["extra_logs"]["verdict"][1], "no_code");

  auto metrics = h.c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  for (const char* m : {"cudal1_queue_depth 0", "cudal1_jobs_total{status=\"done\"} 4", "cudal1_evaluations_total{status=\"ok\"}",
                        "cudal1_evaluations_total{status=\"incorrect\"} 1", "cudal1_build_seconds_total", "cudal1_device_seconds_total"})
    EXPECT_NE(metrics->body.find(m), std::string::npos) << m << "\n" << metrics->body;
}

TEST_F(ServeTest, BadRequestsGetClearErrorsAndNothingIsStored) {
  Server s(dir, {"--lanes", "1", "--max-queue", "2", "--max-body-mb", "1"}, {"CUDAL1_SERVE_TOKEN=s3cret"});
  Http h(s.port(), "s3cret");
  auto [u1, unauth] = Http(s.port()).post("/evaluate", evaluate_body("ok_scale_add_alpha.py"));
  EXPECT_EQ(u1, 401);
  EXPECT_NE(unauth["error"].get<std::string>().find("Authorization: Bearer"), std::string::npos);
  EXPECT_EQ(Http(s.port(), "wrong").post("/evaluate", evaluate_body("ok_scale_add_alpha.py")).first, 401);
  EXPECT_EQ(Http(s.port()).get("/metrics").first, 401);

  EXPECT_EQ(Http(s.port()).get("/metrics?token=s3cret").first, 200);  // for clients that cannot send a header

  // A chunked body (no length) is read like any other, within the same bound: this one is
  // judged (it lacks every field), and one over the bound gets 413 (or, when the service hangs up
  // on the rest of it first, no answer), and nothing is kept of it.
  auto chunked = h.c.Post("/evaluate", [](size_t offset, httplib::DataSink& sink) {
    if (offset == 0) sink.write("{}", 2);
    sink.done();
    return true;
  }, "application/json");
  ASSERT_TRUE(chunked) << httplib::to_string(chunked.error());
  EXPECT_EQ(chunked->status, 400);
  const std::string piece(64 << 10, ' ');
  auto endless = h.c.Post("/evaluate", [&](size_t offset, httplib::DataSink& sink) {
    if (offset < (std::size_t(2) << 20)) sink.write(piece.data(), piece.size());
    else sink.done();
    return true;
  }, "application/json");
  if (endless) EXPECT_EQ(endless->status, 413);
  else EXPECT_EQ(endless.error(), httplib::Error::Write);
  EXPECT_EQ(h.get("/healthz").first, 200);
  // Methods the service lacks: read within the bound like a POST, then 405.
  auto put = h.c.Put("/evaluate", "{}", "application/json");
  ASSERT_TRUE(put) << httplib::to_string(put.error());
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, POST");
  // Clients that hang up (a reset) before their answer is written: the service's write fails,
  // and the service goes on.
  for (int i = 0; i < 20; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(s.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string request = "GET /metrics?token=s3cret HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), ssize_t(request.size()));
    linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    ::close(fd);
  }
  // Each counts against 127.0.0.1 (at most 16 at once) until the service has seen it end, which
  // takes it moments; over the cap a client gets 429 meanwhile.
  int health = 0;
  for (auto end = Clock::now() + std::chrono::seconds(10); health != 200 && Clock::now() < end;)
    if ((health = h.get("/healthz").first) != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(health, 200);
  auto odd = h.c.Get("/%ff%fe");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->status, 404);
  EXPECT_EQ(h.get("/healthz").first, 200);

  auto raw = h.c.Post("/evaluate", "{not json", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_NE(raw->body.find("not JSON"), std::string::npos);
  auto [m1, missing] = h.post("/evaluate", {{"task_id", "scale_add"}, {"reference_code", "x"}});
  EXPECT_EQ(m1, 400);
  EXPECT_NE(missing["error"].get<std::string>().find("kernel_code"), std::string::npos);
  auto [m2, unknown] = h.post("/evaluate", {{"task_id", "level9/none"}, {"kernel_code", "x"}});
  EXPECT_EQ(m2, 400);
  EXPECT_NE(unknown["error"].get<std::string>().find("reference_code"), std::string::npos);
  // OpenRLHF's label: a one-line label that names no bundled task is a mistyped id, not a source.
  const std::string answer = "## Code Implementation\n```python\n" + fixture("candidates/ok_scale_add_alpha.py") + "```\n";
  auto [m4, typo] = h.post("/reward", {{"query", {answer}}, {"labels", {"level1/19_ReLUx"}}});
  EXPECT_EQ(m4, 400);
  EXPECT_NE(typo["error"].get<std::string>().find("level1/19_ReLUx"), std::string::npos) << typo.dump();
  auto [m3, bad_batch] = h.post("/evaluate/batch", {{"requests", {evaluate_body("ok_scale_add_alpha.py"), {{"task_id", 3}}}}});
  EXPECT_EQ(m3, 400);
  EXPECT_NE(bad_batch["error"].get<std::string>().find("requests[1]"), std::string::npos);

  auto big = h.post("/evaluate", {{"task_id", "scale_add"}, {"kernel_code", std::string(2 << 20, 'x')}});
  EXPECT_EQ(big.first, 413);
  EXPECT_NE(big.second["error"].get<std::string>().find("larger"), std::string::npos);

  // A batch that can never fit is refused outright.
  json three = {{"requests", {evaluate_body("ok_scale_add_alpha.py"), evaluate_body("ok_scale_add_out_buffers.py"),
                              evaluate_body("incorrect_scale_add_zeros.py")}}};
  auto never = h.post("/evaluate/batch", three);
  EXPECT_EQ(never.first, 400);
  EXPECT_NE(never.second["error"].get<std::string>().find("split it"), std::string::npos);
  // One job pending, then two more do not fit a queue of two: none of them is stored, and the
  // client is told when to retry.
  ASSERT_EQ(h.post("/evaluate", evaluate_body("ok_scale_add_alpha.py")).first, 202);
  json two = {{"requests", {evaluate_body("ok_scale_add_out_buffers.py"), evaluate_body("incorrect_scale_add_zeros.py")}}};
  auto full = h.c.Post("/evaluate/batch", two.dump(), "application/json");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429);
  EXPECT_GE(std::atoi(full->get_header_value("Retry-After").c_str()), 1);
  // Of everything above, one job was stored.
  auto metrics = h.c.Get("/metrics");
  ASSERT_TRUE(metrics);
  int64_t jobs = 0;
  std::regex total(R"(cudal1_jobs_total\{status="\w+"\} (\d+))");
  for (std::sregex_iterator it(metrics->body.begin(), metrics->body.end(), total), end; it != end; ++it) jobs += std::stoll((*it)[1]);
  EXPECT_EQ(jobs, 1);
}

// kill -9 while a batch is being evaluated, then a restart on the same files: every job the
// client was told about ends, done or failed, and none gets a verdict other than its own.
TEST_F(ServeTest, AKilledServiceRunsItsUnfinishedJobsAfterARestart) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ok_scale_add_alpha.py", "ok"}, {"incorrect_scale_add_off_by_5pct.py", "incorrect"},
      {"ok_scale_add_out_buffers.py", "ok"}, {"rejected_scale_add_inplace_on_y.py", "rejected"},
      {"incorrect_scale_add_zeros.py", "incorrect"}, {"ok_scale_add_joined_threads.py", "ok"}};
  json batch = {{"requests", json::array()}};
  for (auto& [file, _] : cases) batch["requests"].push_back(evaluate_body(file));
  std::vector<std::string> ids;
  std::map<std::string, json> before;  // jobs done before the kill
  {
    Server s(dir, {"--no-auth", "--lanes", "1"});
    Http h(s.port());
    auto [code, sub] = h.post("/evaluate/batch", batch);
    ASSERT_EQ(code, 202);
    for (auto& id : sub["job_ids"]) ids.push_back(id);
    // Kill once the first job is done and the next one is running.
    for (auto end = Clock::now() + std::chrono::seconds(120); Clock::now() < end;) {
      auto [hc, health] = h.get("/healthz");
      if (h.get("/results/" + ids[0]).first == 200 && health["running"] == 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (auto& id : ids) {
      auto [rc, r] = h.get("/results/" + id);
      if (rc == 200) before[id] = r;
    }
    ASSERT_FALSE(before.empty());
    ASSERT_LT(before.size(), ids.size()) << "every job finished before the kill";
    s.kill_hard();
  }
  Server again(dir, {"--no-auth", "--lanes", "2"});
  EXPECT_NE(again.log().find("interrupted before and run again"), std::string::npos) << again.log();
  Http h(again.port());
  int rerun = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    json r = h.wait(ids[i]);
    ASSERT_EQ(r["status"], "done") << cases[i].first << ": " << r.dump();
    EXPECT_EQ(r["verdict"], cases[i].second) << cases[i].first;
    if (before.count(ids[i])) EXPECT_EQ(r["verdict"], before[ids[i]]["verdict"]);
    rerun += r["attempts"].get<int>() > 1;
  }
  EXPECT_GE(rerun, 1);  // the job running at the kill ran again
}

// A job whose evaluation took the service down again and again (three starts, each killed while
// it ran) is not started a fourth time: it ends failed and says why, and the lane goes on.
TEST_F(ServeTest, AJobThatKeptStoppingTheServiceEndsFailed) {
  const fs::path jobs = dir / "jobs.db";
  const std::string task = (cudal1::fixtures_dir() / "tasks/scale_add.py").string();
  const std::string cand = (cudal1::fixtures_dir() / "candidates/ok_scale_add_alpha.py").string();
  std::string id;
  for (int start = 0; start < 3; ++start) {  // each open requeues what the last one left running
    cudal1::service::JobStore store(jobs);
    if (start == 0) id = store.submit({json{{"task_path", task}, {"candidate_path", cand}}}, 10).value().at(0);
    ASSERT_EQ(store.claim().value().id, id);
  }
  Server s(dir, {"--no-auth", "--lanes", "1", "--jobs", jobs.string()});
  Http h(s.port());
  // The running service holds its job file: a second one would queue its running jobs again.
  try {
    cudal1::service::JobStore second(jobs);
    ADD_FAILURE() << "a second holder of the job file was let in";
  } catch (const cudal1::Error& e) {
    EXPECT_EQ(e.kind(), cudal1::ErrorKind::usage);
    EXPECT_NE(e.describe().find("--jobs"), std::string::npos) << e.describe();
  }
  json r = h.wait(id);
  EXPECT_EQ(r["status"], "failed") << r.dump();
  EXPECT_NE(r.dump().find("not tried again"), std::string::npos) << r.dump();
  auto [code, sub] = h.post("/evaluate", evaluate_body("ok_scale_add_alpha.py"));
  ASSERT_EQ(code, 202);
  EXPECT_EQ(h.wait(sub["job_id"])["status"], "done");
}

// 200 concurrent submissions (the same file, so one evaluation and the store's answer for the
// rest): every one acknowledged and finished; latency percentiles printed.
TEST_F(ServeTest, TwoHundredConcurrentRequestsAreAllAnswered) {
  // One client address opening 200 connections at once: over the default cap of 16 per address.
  Server s(dir, {"--lanes", "2", "--max-queue", "1000", "--max-connections-per-address", "256"}, {"CUDAL1_SERVE_TOKEN=t"});
  const json body = evaluate_body("ok_scale_add_alpha.py");
  const int n = 200;
  std::vector<std::future<std::pair<double, std::string>>> subs;
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i)
    subs.push_back(std::async(std::launch::async, [&] {
      Http h(s.port(), "t");
      auto t0 = Clock::now();
      auto [code, r] = h.post("/evaluate", body);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      return std::pair{ms, code == 202 ? r["job_id"].get<std::string>() : "HTTP " + std::to_string(code) + " " + r.dump()};
    }));
  std::vector<double> submit_ms;
  std::vector<std::string> ids;
  for (auto& f : subs) {
    auto [ms, id] = f.get();
    submit_ms.push_back(ms), ids.push_back(id);
  }
  Http h(s.port(), "t");
  std::vector<double> done_s;
  for (auto& id : ids) {
    ASSERT_EQ(id.rfind("HTTP", 0), std::string::npos) << id;
    json r = h.wait(id);
    ASSERT_EQ(r["status"], "done");
    EXPECT_EQ(r["accepted"], true);
    done_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(submit_ms.begin(), submit_ms.end());
  auto pct = [&](double p) { return submit_ms[std::size_t(p * double(n - 1))]; };
  std::printf("[ load     ] %d concurrent POST /evaluate: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms; all %d done after %.1f s\n",
              n, pct(0.5), pct(0.95), pct(0.99), submit_ms.back(), n, *std::max_element(done_s.begin(), done_s.end()));
  EXPECT_LT(pct(0.99), 10000.0);
}

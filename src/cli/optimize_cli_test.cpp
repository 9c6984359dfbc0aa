// `cudal1 optimize` as a user meets it: an endpoint that fails every answer ends the run with its
// error (said once on the way, kept in every sample, and in the exit status), the progress in a
// log holds no carriage returns, a file answered twice in a round counts once, a run that finds
// nothing faster than what was known says that no task improved, and a local model runs on what
// the machine has.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/fixture_cases.h"
#ifdef CUDAL1_HAVE_HTTP
#include "policy/fake_chat_server.h"
#endif

namespace fs = std::filesystem;
using json = nlohmann::json;
using cudal1::test::CliRun;
using cudal1::test::run_cli;

namespace {

// A run folder and a store of its own, on the CPU, one round of the scale_add fixture.
struct OptimizeRun {
  fs::path dir = cudal1::make_private_dir("cudal1-optimize-cli");
  ~OptimizeRun() { fs::remove_all(dir); }
  std::string args(const std::string& more, const std::string& run = "run") const {
    return "optimize " + (cudal1::fixtures_dir() / "tasks" / "scale_add.py").string() + " -d cpu --lanes 1 --rounds 1 --run " +
           (dir / run).string() + " --db " + (dir / "store.db").string() + " " + more;
  }
  std::vector<json> samples(const std::string& run = "run") const {
    std::vector<json> lines;
    std::ifstream in(dir / run / "samples.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
    return lines;
  }
  // A replay folder answering scale_add with these fixture candidates, in this order.
  std::string replay(const std::vector<std::string>& candidates) const {
    fs::create_directories(dir / "set" / "scale_add");
    for (std::size_t i = 0; i < candidates.size(); ++i)
      fs::copy_file(cudal1::fixtures_dir() / "candidates" / candidates[i], dir / "set" / "scale_add" / (std::to_string(i) + ".py"));
    return "--policy replay --replay " + (dir / "set").string();
  }
};

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

#ifdef CUDAL1_HAVE_HTTP
namespace {

// Three answers asked of `base_url`, each failing: the run says the failure once as it meets it,
// keeps it in every sample, and ends with it, the hint and a non-zero status.
void expect_every_answer_failed(const std::string& base_url, const std::vector<std::string>& words, const std::string& hint) {
  OptimizeRun r;
  CliRun c = run_cli(r.args("--policy openai --group 3"), "CUDAL1_OPENAI_BASE_URL=" + base_url + " CUDAL1_OPENAI_MODEL=m OPENAI_API_KEY=");
  EXPECT_EQ(c.exit_code, 5) << c.err;
  const std::string note = "cudal1 optimize: scale_add: ";
  ASSERT_EQ(count_of(c.err, note), 1u) << c.err;
  std::string said = c.err.substr(c.err.find(note));
  said = said.substr(0, said.find('\n'));
  EXPECT_NE(c.err.find("every answer of the run failed (3): "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("hint: " + hint), std::string::npos) << c.err;
  std::vector<json> samples = r.samples();
  ASSERT_EQ(samples.size(), 3u);
  for (auto& w : words) {
    EXPECT_NE(said.find(w), std::string::npos) << "'" << w << "' is not in " << said;
    for (auto& s : samples) {
      EXPECT_TRUE(s["verdict"]["status"].is_null());
      ASSERT_TRUE(s.value("error", json()).is_string()) << s.dump();
      EXPECT_NE(s["error"].get<std::string>().find(w), std::string::npos) << s["error"];
    }
  }
}

}  // namespace

TEST(OptimizeCli, AServerErrorEndsTheRunWithTheServersWords) {
  cudal1::policy::FakeEndpoint server([](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_header("Retry-After", "0");  // retried at once: the test does not wait out a backoff
    res.set_content(R"({"error": {"message": "engine overloaded"}})", "application/json");
  });
  expect_every_answer_failed(server.base_url(), {"HTTP 500 from", "engine overloaded"}, "check the server's log");
}

TEST(OptimizeCli, ABodyThatIsNotJsonEndsTheRunWithItsStart) {
  cudal1::policy::FakeEndpoint server([](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>bad gateway</html>", "text/html");
  });
  expect_every_answer_failed(server.base_url(), {"HTTP 200 from", "<html>bad gateway</html>"}, "check the server's log");
}

TEST(OptimizeCli, ARefusedConnectionEndsTheRunSayingNothingAnswered) {
  std::string url;
  {
    cudal1::policy::FakeEndpoint gone([](const httplib::Request&, httplib::Response&) {});
    url = gone.base_url();
  }
  expect_every_answer_failed(url, {"could not connect to " + url.substr(0, url.size() - 3)}, "start the server");
}

// The endpoint and the request's settings from flags, over the environment: what reaches the
// server is what the person typed.
TEST(OptimizeCli, TheOpenAIFlagsReachTheRequest) {
  std::mutex m;
  json asked;
  cudal1::policy::FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(m);
    asked = json::parse(req.body, nullptr, false);
    res.status = 400;  // not retried: one request an answer
    res.set_content(R"({"error": {"message": "seen"}})", "application/json");
  });
  OptimizeRun r;
  CliRun c = run_cli(r.args("--policy openai --group 1 --openai-url " + server.base_url() +
                            " --openai-model flagged --openai-temperature 0.25 --openai-top-p 0.5 --openai-max-tokens 77 --openai-concurrency 1 --openai-timeout 30"),
                     "CUDAL1_OPENAI_BASE_URL= OPENAI_BASE_URL= CUDAL1_OPENAI_MODEL=from_env OPENAI_API_KEY=");
  EXPECT_EQ(c.exit_code, 5) << c.err;  // every answer failed: the server refused them
  std::lock_guard<std::mutex> lock(m);
  ASSERT_TRUE(asked.is_object()) << c.err;
  EXPECT_EQ(asked["model"], "flagged");
  EXPECT_DOUBLE_EQ(asked["temperature"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(asked["top_p"].get<double>(), 0.5);
  EXPECT_EQ(asked["max_tokens"], 77);

  CliRun none = run_cli(r.args("--policy openai", "none"), "CUDAL1_OPENAI_BASE_URL= OPENAI_BASE_URL= CUDAL1_OPENAI_MODEL=m");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("--openai-url"), std::string::npos) << none.err;
}

TEST(OptimizeCli, ABaseUrlWithoutV1GetsTheHintToAddIt) {
  cudal1::policy::FakeEndpoint server([](const httplib::Request&, httplib::Response& res) {
    res.set_content(cudal1::policy::completion("never asked"), "application/json");
  });
  std::string root = server.base_url().substr(0, server.base_url().size() - 3);  // without /v1
  expect_every_answer_failed(root, {"HTTP 404 from " + root + "/chat/completions"},
                             "add /v1 to the base URL, where OpenAI-compatible servers serve the API: "
                             "CUDAL1_OPENAI_BASE_URL=" + root + "/v1");
}
#endif

// stderr into a file (run_cli's) is a log: plain lines, no redraws. The two answers hold one file.
TEST(OptimizeCli, AFileAnsweredTwiceInARoundCountsOnceAndALogHasNoCarriageReturns) {
  OptimizeRun r;
  CliRun c = run_cli(r.args(r.replay({"ok_scale_add_alpha.py", "ok_scale_add_alpha.py"}) + " --group 2 --no-timing --json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  json task = json::parse(c.out)["tasks"][0];
  EXPECT_EQ(task["tried"], 1) << task.dump();
  EXPECT_EQ(task["evaluated"], 1) << task.dump();
  EXPECT_EQ(task["correct"], 1) << task.dump();
  std::vector<json> samples = r.samples();
  ASSERT_EQ(samples.size(), 2u);  // every answer is a sample, for trainers
  for (auto& s : samples) EXPECT_TRUE(s["verdict"]["accepted"].get<bool>()) << s.dump();
  EXPECT_EQ(c.err.find('\r'), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("round 1/1 · 1/1 task · round done · tried 1 · correct 1"), std::string::npos) << c.err;
}

// A second run that finds only the file the first one found: its best is where it started.
TEST(OptimizeCli, ARunThatFindsOnlyWhatWasKnownSaysNoTaskImproved) {
  OptimizeRun r;
  std::string policy = r.replay({"ok_scale_add_alpha.py"});
  ASSERT_EQ(run_cli(r.args(policy, "first")).exit_code, 0);
  CliRun again = run_cli(r.args(policy, "second"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("no task improved"), std::string::npos) << again.out;
  EXPECT_NE(again.err.find("no task improved"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("1 task improved"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("1 tasks improved"), std::string::npos) << again.err;
}

// --policy model where the build has the trainer: the model goes where this libtorch can run it
// (a CPU-only one runs it on the CPU), and a GPU it cannot reach is a usage error saying what to
// pass, never an internal error.
TEST(OptimizeCli, ALocalModelRunsOnWhatTheMachineHas) {
  CliRun help = run_cli("optimize --help");
  if (help.out.find("--model-device") == std::string::npos) GTEST_SKIP() << "this build has no trainer";
  std::string tokens_line = help.out.substr(help.out.find("--max-new-tokens"));
  EXPECT_NE(tokens_line.substr(0, tokens_line.find('\n')).find("2048"), std::string::npos) << tokens_line;

  OptimizeRun r;
  fs::path model = r.dir / "model";
  CliRun init = run_cli("train init --out " + model.string() + " --tokenizer " +
                        (cudal1::fixtures_dir() / "tokenizer" / "llama3").string() +
                        " --hidden 32 --layers 1 --heads 2 --max-positions 8192 --dtype float32");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  std::string policy = "--policy model --model " + model.string() + " --max-new-tokens 8 --group 2";
  CliRun c = run_cli(r.args(policy));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(r.samples().size(), 2u);
  CliRun cuda = run_cli(r.args(policy + " --model-device cuda", "cuda"));
  if (cuda.exit_code != 0) {
    EXPECT_EQ(cuda.exit_code, 2) << cuda.err;
    EXPECT_NE(cuda.err.find("pass --model-device cpu"), std::string::npos) << cuda.err;
  }
}

// --turns and --gamma out of range are usage errors that say what the option takes, before anything runs.
TEST(OptimizeCli, TurnsAndGammaOutOfRangeSayWhatTheyTake) {
  OptimizeRun r;
  CliRun turns = run_cli(r.args("--policy builtin --turns 9"));
  EXPECT_EQ(turns.exit_code, 2) << turns.err;
  EXPECT_NE(turns.err.find("--turns takes a whole number from 1 to 8 (got '9')"), std::string::npos) << turns.err;
  CliRun zero = run_cli(r.args("--policy builtin --turns 0"));
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  CliRun gamma = run_cli(r.args("--policy builtin --gamma 1.5"));
  EXPECT_EQ(gamma.exit_code, 2) << gamma.err;
  EXPECT_NE(gamma.err.find("--gamma takes a number from 0 to 1 (got '1.5')"), std::string::npos) << gamma.err;
  EXPECT_FALSE(fs::exists(r.dir / "run")) << "nothing ran";
}

// --turns 2 through the command: the replay set's wrong file is answered first, and the slot's
// second turn (replay ignores the feedback and gives its next kernel) is the right one. Both are
// samples of slot 0 with their turns and returns; the summary carries the turns and, when the
// accepted file does not beat the reference beyond the noise on this machine, says why best/ has none.
TEST(OptimizeCli, TurnsReviseASlotAndTheSummarySaysWhatBestHolds) {
  OptimizeRun r;
  CliRun c = run_cli(r.args(r.replay({"incorrect_scale_add_off_by_5pct.py", "ok_scale_add_alpha.py"}) +
                            " --group 1 --turns 2 --gamma 0.5 --json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  json summary = json::parse(c.out);
  EXPECT_EQ(summary["turns"], 2);
  EXPECT_DOUBLE_EQ(summary["gamma"].get<double>(), 0.5);
  json task = summary["tasks"][0];
  EXPECT_EQ(task["tried"], 2) << task.dump();
  EXPECT_EQ(task["correct"], 1) << task.dump();
  if (task.contains("best_file")) {
    EXPECT_GT(task["best_file_speedup"].get<double>(), 1.03) << task.dump();
  } else {
    EXPECT_EQ(task["best_note"], "no answer beat the reference by more than the noise (best " +
                                     [&] { char b[32]; std::snprintf(b, sizeof b, "%.2fx", task["best_speedup"].get<double>()); return std::string(b); }() +
                                     "); the reference stands") << task.dump();
    EXPECT_FALSE(fs::exists(r.dir / "run" / "best" / "scale_add.py"));
  }
  std::vector<json> samples = r.samples();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0]["turn"], 0);
  EXPECT_EQ(samples[1]["turn"], 1);
  EXPECT_EQ(samples[0]["slot"], samples[1]["slot"]);
  EXPECT_EQ(samples[0]["verdict"]["status"], "incorrect");
  EXPECT_TRUE(samples[1]["verdict"]["accepted"].get<bool>());
  EXPECT_NE(samples[0]["feedback"].get<std::string>().find("Status: incorrect (not accepted)"), std::string::npos);
  EXPECT_TRUE(samples[1]["feedback"].is_null());
  // The round's raw rewards [0, s] normalised together: -1 and 1; returns -1 + 0.5 * 1 and 1.
  EXPECT_NEAR(samples[0]["reward"].get<double>(), -1.0, 1e-12);
  EXPECT_NEAR(samples[0]["return"].get<double>(), -0.5, 1e-12);
  EXPECT_NEAR(samples[1]["return"].get<double>(), 1.0, 1e-12);
}

// The training stages share the loop's options but train on one answer per slot: --turns there is
// a usage error naming the command it belongs to, before any model is loaded.
TEST(OptimizeCli, TrainingStagesRefuseTurns) {
  if (run_cli("train crl --help").exit_code != 0) GTEST_SKIP() << "this build has no trainer";
  OptimizeRun r;
  CliRun c = run_cli("train crl " + (cudal1::fixtures_dir() / "tasks" / "scale_add.py").string() + " --turns 2 --model " +
                     (r.dir / "no-model").string() + " --out " + (r.dir / "out").string());
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("train crl trains on one answer per slot and takes no --turns"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("multi-turn refinement is for cudal1 optimize"), std::string::npos) << c.err;
}

// `cudal1 serve` against hostile clients and hostile candidates (docs/serve.md, "Trust model and
// hardening"): clients that trickle their headers or open connection after connection, bodies
// sent without the token, another process binding the service's port, the token's sources, files
// of the files folder changed behind the service's back, and --no-auth off loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <thread>

#include "service/job_store.h"
#include "service/serve_test_support.h"

using namespace cudal1::serve_test;

namespace {

const std::vector<std::string> kToken = {"CUDAL1_SERVE_TOKEN=s3cret"};

}  // namespace

// --no-auth is allowed only where every address the host resolves to is loopback.
TEST_F(ServeTest, NoAuthIsRefusedUnlessTheHostIsLoopback) {
  for (const char* host : {"0.0.0.0", "127.0.0.1.invalid"}) {
    auto [code, log] = serve_until_exit(dir, {"--no-auth", "--host", host});
    EXPECT_EQ(code, 2) << host << ": " << log;
    EXPECT_NE(log.find("loopback"), std::string::npos) << host << ": " << log;
  }
  Server s(dir, {"--no-auth", "--host", "localhost", "--lanes", "1"});
  EXPECT_NE(s.port(), 0);
}

// The token comes from CUDAL1_SERVE_TOKEN or a file only its owner can read, never from the
// command line, where every local process can read it.
TEST_F(ServeTest, TheTokenComesFromTheEnvironmentOrAPrivateFile) {
  {
    Server s(dir, {"--lanes", "1"}, {"CUDAL1_SERVE_TOKEN=from-env"});
    EXPECT_EQ(Http(s.port(), "from-env").get("/metrics").first, 200);
    EXPECT_EQ(Http(s.port(), "s3cret").get("/metrics").first, 401);
  }
  const fs::path file = dir / "token";
  {
    std::ofstream(file) << "from-file\n";
  }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  {
    Server s(dir, {"--lanes", "1", "--token-file", file.string()}, {"CUDAL1_SERVE_TOKEN=from-env"});
    EXPECT_EQ(Http(s.port(), "from-file").get("/metrics").first, 200);  // the file's line, without its newline
    EXPECT_EQ(Http(s.port(), "from-env").get("/metrics").first, 401);  // the explicit flag wins
  }
  fs::permissions(file, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  auto [code, log] = serve_until_exit(dir, {"--token-file", file.string()});
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find("chmod 600"), std::string::npos) << log;
  std::tie(code, log) = serve_until_exit(dir, {"--token", "s3cret"});
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find("CUDAL1_SERVE_TOKEN"), std::string::npos) << log;
  EXPECT_NE(log.find("--token-file"), std::string::npos) << log;
  std::tie(code, log) = serve_until_exit(dir, {});
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find("--token-file"), std::string::npos) << log;
}

// Files the service stores are read-only and hold what was sent; one changed behind its back is
// noticed: written again when the same content comes, and a job that names it fails instead of
// evaluating something else.
TEST_F(ServeTest, StoredFilesAreReadOnlyAndAChangedOneIsNeverTrusted) {
  const fs::path files = dir / "serve-files" / "files";
  const std::string task = fixture("tasks/scale_add.py");
  const fs::path task_file = files / (cudal1::sha256_hex(task) + ".py");
  std::string job_id;
  {
    // A job stored before, whose task file was changed since.
    fs::create_directories(files);
    std::ofstream(task_file) << "class Model: pass  # not what was stored\n";
    cudal1::service::JobStore jobs(dir / "store.db.jobs");
    const std::string cand = (cudal1::fixtures_dir() / "candidates/ok_scale_add_alpha.py").string();
    job_id = jobs.submit({json{{"task_path", task_file.string()}, {"candidate_path", cand}}}, 10).value().at(0);
  }
  Server s(dir, {"--lanes", "1"}, kToken);
  Http h(s.port(), "s3cret");
  json failed = h.wait(job_id);
  EXPECT_EQ(failed["status"], "failed") << failed.dump();
  EXPECT_NE(failed.dump().find("changed"), std::string::npos) << failed.dump();

  ASSERT_EQ(h.post("/evaluate", evaluate_body("ok_scale_add_alpha.py")).first, 202);
  EXPECT_EQ(cudal1::read_file(task_file), task);
  EXPECT_EQ(fs::status(task_file).permissions(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const fs::path cand_file = files / (cudal1::sha256_hex(fixture("candidates/ok_scale_add_alpha.py")) + ".py");
  EXPECT_EQ(fs::status(cand_file).permissions(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_NE(s.log().find(task_file.filename().string()), std::string::npos) << s.log();
  EXPECT_EQ(fs::status(files).permissions() & (fs::perms::group_write | fs::perms::others_write), fs::perms::none);
}

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

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

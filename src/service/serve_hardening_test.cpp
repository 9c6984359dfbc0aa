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

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// True once the service has closed the connection (or reset it); false while it is open.
bool closed_by_peer(int fd) {
  char b;
  ssize_t n = ::recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

std::string exchange(int fd, const std::string& request) {
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
  return read_until_closed(fd);
}

}  // namespace

// 80 clients trickle header bytes and never finish (16 from each of five addresses, so the
// per-address cap lets them all in). They hold no thread: a client with the token is answered at
// once. And the header deadline is one deadline for the whole header, which a trickle does not
// reset: every one of them is closed.
TEST_F(ServeTest, SlowClientsHoldNoThreadAndAreClosedAtTheHeaderDeadline) {
  Server s(dir, {"--lanes", "1"}, kToken);
  std::vector<int> slow;
  for (int i = 0; i < 80; ++i) {
    slow.push_back(connect_from("127.0.0." + std::to_string(2 + i / 16), s.port()));
    ASSERT_GE(slow.back(), 0) << i;
  }
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  std::atomic<bool> done{false};
  std::vector<char> closed(slow.size(), 0);
  std::vector<double> closed_at(slow.size(), 0);
  const auto start = Clock::now();
  std::thread trickle([&] {
    for (std::size_t step = 0; !done; ++step) {
      for (std::size_t i = 0; i < slow.size(); ++i) {
        if (closed[i]) continue;
        const char b = step < head.size() ? head[step] : 'a';
        if (::send(slow[i], &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 || closed_by_peer(slow[i]))
          closed[i] = 1, closed_at[i] = seconds_since(start);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  Http h(s.port(), "s3cret");
  h.c.set_read_timeout(10, 0);
  const auto asked = Clock::now();
  auto [code, health] = h.get("/healthz");
  auto metrics = h.c.Get("/metrics");
  const double answered_s = seconds_since(asked);
  // No ASSERT while the trickling thread runs: it must be joined.
  EXPECT_EQ(code, 200);
  EXPECT_EQ(metrics ? metrics->status : 0, 200);
  EXPECT_LT(answered_s, 3.0) << "the slow clients held the service's threads";
  // The default deadline is 5 s; a loaded machine gets a generous margin on top.
  for (auto end = Clock::now() + std::chrono::seconds(30); Clock::now() < end;) {
    if (std::count(closed.begin(), closed.end(), 1) == int(slow.size())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done = true;
  trickle.join();
  EXPECT_EQ(std::count(closed.begin(), closed.end(), 1), int(slow.size())) << "slow clients left open";
  EXPECT_GE(*std::min_element(closed_at.begin(), closed_at.end()), 3.0) << "closed before the header deadline";
  for (int fd : slow) ::close(fd);
}

// One address holds 16 connections at once (the default): the 17th is told why and closed, other
// addresses are served meanwhile, and once one of the 16 closes the address gets in again.
TEST_F(ServeTest, OneAddressHoldsABoundedNumberOfConnections) {
  Server s(dir, {"--lanes", "1", "--header-timeout", "30"}, kToken);
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(connect_from("127.0.0.7", s.port()));
    ASSERT_GE(idle.back(), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the service has taken them
  int extra = connect_from("127.0.0.7", s.port(), 5);
  ASSERT_GE(extra, 0);
  const std::string reply = exchange(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ::close(extra);
  EXPECT_EQ(reply.rfind("HTTP/1.1 429", 0), 0u) << reply;
  EXPECT_NE(reply.find("--max-connections-per-address"), std::string::npos) << reply;
  EXPECT_EQ(Http(s.port()).get("/healthz").first, 200);  // 127.0.0.1 is another client

  ::close(idle.back());
  idle.pop_back();
  std::string again;
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end;) {
    int fd = connect_from("127.0.0.7", s.port(), 5);
    again = exchange(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ::close(fd);
    if (again.rfind("HTTP/1.1 200", 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(again.rfind("HTTP/1.1 200", 0), 0u) << again;
  for (int fd : idle) ::close(fd);
}

// A request without the token is answered from its headers alone: the body it announces is never
// waited for (here it never comes), and the connection is closed after the answer.
TEST_F(ServeTest, TheTokenIsCheckedBeforeAnyBodyIsRead) {
  Server s(dir, {"--lanes", "1"}, kToken);
  auto answer_of = [&](const std::string& request) {
    int fd = connect_from("127.0.0.1", s.port(), 10);
    const auto t0 = Clock::now();
    std::string reply = exchange(fd, request);  // until the service closes
    ::close(fd);
    EXPECT_LT(seconds_since(t0), 3.0) << request;
    return reply;
  };
  const std::string body_head = "Host: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n";
  std::string r = answer_of("POST /evaluate HTTP/1.1\r\n" + body_head + "\r\n{\"task_id\":");
  EXPECT_EQ(r.rfind("HTTP/1.1 401", 0), 0u) << r;
  EXPECT_NE(r.find("Authorization: Bearer"), std::string::npos) << r;
  // A client that asks before sending its body is refused, not invited to send it.
  r = answer_of("POST /evaluate HTTP/1.1\r\n" + body_head + "Expect: 100-continue\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 401", 0), 0u) << r;
  EXPECT_EQ(r.find("100 Continue"), std::string::npos) << r;
  // The one endpoint without a token takes no body either.
  r = answer_of("GET /healthz HTTP/1.1\r\n" + body_head + "\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r;
  // With the token the body is read and judged as before.
  Http h(s.port(), "s3cret");
  EXPECT_EQ(h.post("/evaluate", {{"task_id", "scale_add"}}).first, 400);
}

// The service's socket does not share its port: a process that asks for SO_REUSEPORT (which
// would hand it a share of the connections, bearer tokens included) cannot bind it.
TEST_F(ServeTest, NoOtherSocketCanBindTheServicesPort) {
  Server s(dir, {"--lanes", "1"}, kToken);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes), 0);
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(s.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  errno = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  ::close(fd);
}

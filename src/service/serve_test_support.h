// What the tests of `cudal1 serve` share: the real service as a child process on a free port, an
// HTTP client of it, raw sockets for clients that misbehave, and the fixture's evaluate bodies.
#pragma once

#include <httplib.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/fixture_cases.h"

extern char** environ;

namespace cudal1::serve_test {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline std::string fixture(const std::string& rel) { return read_file(fixtures_dir() / rel); }

// `cudal1 serve` ARGS with the test's environment plus ENV ("NAME=value"), stderr into LOG.
inline pid_t spawn_serve(const fs::path& dir, const std::vector<std::string>& extra, const std::vector<std::string>& env,
                         const fs::path& log) {
  std::vector<std::string> args = {CUDAL1_BINARY, "serve", "--port", "0", "-d", "cpu", "--db", (dir / "store.db").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<std::string> envs = env;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("CUDAL1_SERVE_TOKEN=", 0) != 0) envs.push_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : envs) envp.push_back(e.data());
  argv.push_back(nullptr), envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// One `cudal1 serve` process on a free port; killed (SIGKILL) when destroyed unless stopped first.
class Server {
 public:
  Server(const fs::path& dir, const std::vector<std::string>& extra, const std::vector<std::string>& env = {})
      : log_(dir / ("serve" + std::to_string(++starts_) + ".log")) {
    pid_ = spawn_serve(dir, extra, env, log_);
    // The port is in the whole first line (it ends with where the verdicts go), not a part of it.
    const std::regex listening(R"(listening on http://(?:\[[^\]]*\]|[^:/\s]+):(\d+)[^\n]*verdicts in [^\n]*\n)");
    for (auto end = Clock::now() + std::chrono::seconds(30); Clock::now() < end && port_ == 0;) {
      std::smatch m;
      std::string text = read_file(log_);
      if (std::regex_search(text, m, listening)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(port_, 0) << read_file(log_);
  }
  ~Server() { kill_hard(); }
  void kill_hard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  int port() const { return port_; }
  std::string log() const { return read_file(log_); }

 private:
  static inline int starts_ = 0;
  fs::path log_;
  pid_t pid_ = 0;
  int port_ = 0;
};

// A `cudal1 serve` that is expected to refuse to start: its exit status and what it wrote.
inline std::pair<int, std::string> serve_until_exit(const fs::path& dir, const std::vector<std::string>& extra,
                                                    const std::vector<std::string>& env = {}) {
  const fs::path log = dir / "refused.log";
  pid_t pid = spawn_serve(dir, extra, env, log);
  int status = 0;
  for (auto end = Clock::now() + std::chrono::seconds(60); waitpid(pid, &status, WNOHANG) == 0;) {
    if (Clock::now() > end) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return {-1, "still running after 60 s: " + read_file(log)};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(log)};
}

struct Http {
  httplib::Client c;
  explicit Http(int port, const std::string& token = "") : c("127.0.0.1", port) {
    c.set_read_timeout(120, 0);
    // A send the server never reads (a body it refused without reading) fails after 30 s instead
    // of blocking the test for good: httplib's own write timeout only bounds the wait to start.
    c.set_socket_options([](int sock) {
      timeval bound{30, 0};
      ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    });
    if (!token.empty()) c.set_bearer_token_auth(token.c_str());
  }
  std::pair<int, json> post(const std::string& path, const json& body) {
    auto r = c.Post(path.c_str(), body.dump(), "application/json");
    if (!r) return {0, json{{"error", httplib::to_string(r.error())}}};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::pair<int, json> get(const std::string& path) {
    auto r = c.Get(path.c_str());
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  // Polls /results until the job has ended (or the timeout).
  json wait(const std::string& id, int timeout_s = 240) {
    for (auto end = Clock::now() + std::chrono::seconds(timeout_s); Clock::now() < end;) {
      auto [status, body] = get("/results/" + id);
      if (status == 200) return body;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return json();
  }
};

// A TCP connection to the service from `source` (any 127.x address is this machine's), each
// receive bounded by `recv_timeout_s`; -1 when it cannot connect.
inline int connect_from(const std::string& source, int port, int recv_timeout_s = 10) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  to.sin_port = htons(uint16_t(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval bound{recv_timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the peer sends until it closes (or a receive times out).
inline std::string read_until_closed(int fd) {
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, std::size_t(n));
  return got;
}

inline json evaluate_body(const std::string& candidate) {
  return {{"task_id", "scale_add"}, {"reference_code", fixture("tasks/scale_add.py")},
          {"kernel_code", fixture("candidates/" + candidate)}};
}

struct ServeTest : ::testing::Test {
  // A server may answer and close before a client has written its whole body (411, 413): the
  // client's write then fails with EPIPE, which must not end the test process.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
  fs::path dir = make_private_dir("cudal1-serve-test");
  ~ServeTest() override { fs::remove_all(dir); }
};

}  // namespace cudal1::serve_test

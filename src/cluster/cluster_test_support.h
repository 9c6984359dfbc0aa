// What the cluster's tests share: a real redis-server on a free local port (append-only file on,
// fsync on every write), and cudal1 processes (workers, producers) with their output in files.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/redis_client.h"
#include "core/hash.h"
#include "core/paths.h"

extern char** environ;

namespace cudal1::cluster_test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(s);
  return ntohs(a.sin_port);
}

// A child process; its stdout and stderr go to files under `dir`. Killed (SIGKILL) when destroyed.
class Proc {
 public:
  Proc(const fs::path& dir, const std::string& name, std::vector<std::string> args,
       const std::vector<std::string>& env = {})
      : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
    std::vector<std::string> envs = env;
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("CUDAL1_REDIS_", 0) != 0) envs.push_back(*e);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    for (auto& e : envs) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()), 0) << args[0];
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() { kill_hard(); }
  void kill_hard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  // Its exit status, or -1 when it ran past `timeout_s` (it is killed then) or died of a signal.
  int wait(double timeout_s) {
    int status = 0;
    for (auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
         waitpid(pid_, &status, WNOHANG) == 0;) {
      if (Clock::now() > end) {
        kill_hard();
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  bool running() { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

 private:
  fs::path out_, err_;
  pid_t pid_ = 0;
};

// redis-server on a free port of 127.0.0.1, its data in `dir`, every write fsynced to its
// append-only file before it is acknowledged.
class RedisServer {
 public:
  RedisServer(const fs::path& dir, std::string password = "")
      : dir_(dir), port_(free_port()), password_(std::move(password)) {
    start();
  }
  void start() {
    std::string bin = find_on_path("redis-server");
    ASSERT_FALSE(bin.empty())
        << "redis-server is not installed: run scripts/setup.sh (or apt-get install redis-server)";
    std::vector<std::string> args = {bin,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     dir_.string(),
                                     "--appendonly",
                                     "yes",
                                     "--appendfsync",
                                     "always",
                                     "--save",
                                     ""};
    if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
    proc_ = std::make_unique<Proc>(dir_, "redis-" + std::to_string(++starts_), args);
    RedisEndpoint e = endpoint();
    for (auto end = Clock::now() + std::chrono::seconds(20); Clock::now() < end;) {
      try {
        RedisConnection::open(e, 1).command({"PING"});
        return;
      } catch (const std::exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    FAIL() << "redis-server did not answer on port " << port_ << ": " << proc_->err()
           << proc_->out();
  }
  void kill_hard() { proc_->kill_hard(); }
  RedisEndpoint endpoint() const {
    RedisEndpoint e;
    e.port = port_;
    e.password = password_;
    return e;
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  fs::path dir_;
  int port_;
  std::string password_;
  int starts_ = 0;
  std::unique_ptr<Proc> proc_;
};

// Polls `done` every 200 ms for up to `timeout_s`; whether it became true.
inline bool eventually(double timeout_s, const std::function<bool()>& done) {
  for (auto end = Clock::now() + std::chrono::duration<double>(timeout_s); Clock::now() < end;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

}  // namespace cudal1::cluster_test

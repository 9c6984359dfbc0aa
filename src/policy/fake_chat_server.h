// policy/fake_chat_server.h — test support, not part of cudal1: a chat completions endpoint on
// 127.0.0.1 that answers as a test scripts it (the OpenAI policy's tests and the loop's test
// through real HTTP).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace cudal1::policy {

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

// Serves POST /v1/chat/completions with `handler` on the server's own threads until destroyed.
class FakeEndpoint {
 public:
  explicit FakeEndpoint(Handler handler) {
    server_.Post("/v1/chat/completions", [this, handler](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      handler(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeEndpoint() {
    { std::lock_guard lock(mutex_); closing_ = true; }
    closed_.notify_all();
    // stop() before the listener runs would be lost, and join() would wait forever.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server_.stop();
    thread_.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return requests_; }
  // For handlers that must not answer: returns when the test ends (or after 10 s).
  void hold() {
    std::unique_lock lock(mutex_);
    closed_.wait_for(lock, std::chrono::seconds(10), [&] { return closing_; });
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::condition_variable closed_;
  bool closing_ = false;
};

inline std::string completion(const std::string& content, int prompt_tokens = 11, int completion_tokens = 22) {
  nlohmann::json message = {{"role", "assistant"}, {"content", content}, {"reasoning_content", "thinking aloud"}};
  return nlohmann::json{{"object", "chat.completion"},
              {"choices", nlohmann::json::array({{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}})},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}}
      .dump();
}

}  // namespace cudal1::policy

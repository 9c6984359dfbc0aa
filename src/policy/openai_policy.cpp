#include "policy/openai_policy.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "core/env.h"
#include "core/error.h"

namespace cudal1::policy {

using nlohmann::json;

namespace {

constexpr double kMaxBackoffS = 60;
constexpr double kMaxRetryAfterS = 300;  // a server asking for longer gets this: the loop must move on
constexpr double kMaxConnectS = 30;      // a server that does not accept within this is down, not busy
constexpr const char* kCompletionsPath = "/chat/completions";
constexpr const char* kNoConnection = "could not connect to ";  // failure_hint knows the failure by it

const char* const kEnvHint =
    "give --openai-url (or set CUDAL1_OPENAI_BASE_URL or OPENAI_BASE_URL) the server's API root, e.g. "
    "http://localhost:8000/v1, and --openai-model (or CUDAL1_OPENAI_MODEL or OPENAI_MODEL) the model it serves; "
    "OPENAI_API_KEY only if the server wants one";

std::string shorten(const std::string& s, std::size_t max = 500) {
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// "http://host:8000/v1/" -> the client's "http://host:8000" and "/v1/chat/completions": servers
// mount the API under a prefix, which must survive.
std::pair<std::string, std::string> split_base_url(const std::string& url) {
  static const std::regex re(R"(^(https?)://([^/?#]+)(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(url, m, re))
    throw Error(ErrorKind::usage, "the OpenAI base URL '" + url + "' is not an http:// or https:// URL",
                "give it as http://HOST:PORT/v1 (vLLM, SGLang and llama.cpp serve the API under /v1)");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (m[1] == "https")
    throw Error(ErrorKind::usage, "this cudal1 was built without https support (cpp-httplib without OpenSSL)",
                "use an http:// URL, e.g. through an SSH tunnel, or build against a cpp-httplib with OpenSSL");
#endif
  std::string path = m[3];
  while (!path.empty() && path.back() == '/') path.pop_back();
  return {std::string(m[1]) + "://" + std::string(m[2]), path + kCompletionsPath};
}

json request_body(const OpenAIConfig& c, const json& messages, std::optional<uint64_t> seed) {
  json body = {{"model", c.model}, {"messages", messages}, {"n", 1}, {"stream", false},
               {"temperature", c.temperature}};
  if (c.top_p) body["top_p"] = *c.top_p;
  if (c.max_tokens > 0) body["max_tokens"] = c.max_tokens;
  // 31 bits: vLLM rejects seeds past int64, and llama.cpp reads a uint32 where all ones means "random".
  if (seed) body["seed"] = *seed & 0x7fffffffu;
  return body;
}

std::size_t token_count(const json& usage, const char* key) {
  auto it = usage.find(key);
  return it != usage.end() && it->is_number_integer() && it->get<int64_t>() > 0 ? it->get<std::size_t>() : 0;
}

// Fills text, finish_reason and tokens from a 2xx body; says what is wrong with it, "" if nothing.
// Only `content` is the answer: `reasoning_content` (vLLM, llama.cpp) is the model thinking aloud.
std::string read_completion(const std::string& body, PolicyAnswer& a) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return "the server's answer is not a JSON object: " + shorten(body);
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    a.prompt_tokens = token_count(*u, "prompt_tokens");
    a.completion_tokens = token_count(*u, "completion_tokens");
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object())
    return "the server's answer has no choices: " + shorten(body);
  const json& choice = (*choices)[0];
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) a.finish_reason = *f;
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object() || !message->contains("content") ||
      !(*message)["content"].is_string())
    return "the server's answer has no choices[0].message.content" +
           (a.finish_reason.empty() ? "" : " (finish_reason " + a.finish_reason + ")");
  a.text = (*message)["content"];
  return "";
}

// The server's own words about a refused request: OpenAI's {"error": {"message"}}, vLLM's
// {"message"}, FastAPI's {"detail"}, else the body itself.
std::string server_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    const json& e = j.contains("error") ? j["error"] : j;
    if (e.is_string()) return e;
    if (e.is_object())
      for (const char* key : {"message", "detail"})
        if (auto it = e.find(key); it != e.end()) return it->is_string() ? it->get<std::string>() : it->dump();
  }
  return body.empty() ? "(empty body)" : shorten(body);
}

// Retry-After as delta-seconds or an HTTP date; nullopt when absent or unreadable.
std::optional<double> retry_after_s(const httplib::Response& res) {
  if (!res.has_header("Retry-After")) return std::nullopt;
  std::string v = res.get_header_value("Retry-After");
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0' && std::isfinite(s)) return std::clamp(s, 0.0, kMaxRetryAfterS);
  std::tm tm{};
  if (strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S", &tm))
    return std::clamp(std::difftime(timegm(&tm), std::time(nullptr)), 0.0, kMaxRetryAfterS);
  return std::nullopt;
}

// Exponential, with jitter so that answers which failed together do not retry together.
double backoff_s(double base, int retry) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double d = std::min(base * std::pow(2.0, retry), kMaxBackoffS);
  return std::uniform_real_distribution<double>(d / 2, d)(rng);
}

PolicyAnswer failed(std::string error) {
  PolicyAnswer a;
  a.error = std::move(error);
  return a;
}

bool mentions_seed(std::string message) {
  std::transform(message.begin(), message.end(), message.begin(), [](unsigned char c) { return std::tolower(c); });
  return message.find("seed") != std::string::npos;
}

}  // namespace

OpenAIConfig openai_config_from_env(const std::string& base_url, const std::string& model) {
  OpenAIConfig c;
  c.base_url = !base_url.empty() ? base_url : first_env({"CUDAL1_OPENAI_BASE_URL", "OPENAI_BASE_URL"});
  c.model = !model.empty() ? model : first_env({"CUDAL1_OPENAI_MODEL", "OPENAI_MODEL"});
  c.api_key = first_env({"OPENAI_API_KEY"});
  std::string missing = c.base_url.empty() ? "a base URL" : "";
  if (c.model.empty()) missing += missing.empty() ? "a model" : " and a model";
  if (!missing.empty()) throw Error(ErrorKind::usage, "no OpenAI-compatible endpoint configured: " + missing + " is missing", kEnvHint);
  return c;
}

OpenAIPolicy::OpenAIPolicy(OpenAIConfig config) : config_(std::move(config)) {
  if (config_.base_url.empty() || config_.model.empty())
    throw Error(ErrorKind::usage, "the OpenAI policy needs a base URL and a model", kEnvHint);
  if (config_.max_concurrency < 1 || config_.max_retries < 0 || !(config_.timeout_s > 0) || config_.backoff_base_s < 0)
    throw Error(ErrorKind::usage, "the OpenAI policy's limits are out of range",
                "max_concurrency must be at least 1, max_retries and the backoff at least 0, the timeout above 0");
  std::tie(scheme_host_port_, path_) = split_base_url(config_.base_url);
  api_root_ = path_.substr(0, path_.size() - std::string(kCompletionsPath).size());
  // cpp-httplib's own URL parsing, so that a URL it cannot use fails now rather than in every answer.
  if (!httplib::Client(scheme_host_port_).is_valid())
    throw Error(ErrorKind::usage, "the OpenAI base URL '" + config_.base_url + "' names no usable host",
                "give it as http://HOST:PORT/v1");
}

std::string OpenAIPolicy::name() const { return "openai:" + config_.model; }

std::string OpenAIPolicy::failure_hint(const std::string& error) const {
  bool has_v1 = api_root_.size() >= 3 && api_root_.compare(api_root_.size() - 3, 3, "/v1") == 0;
  if (error.find("HTTP 404 ") != std::string::npos && !has_v1)
    return "add /v1 to the base URL, where OpenAI-compatible servers serve the API: CUDAL1_OPENAI_BASE_URL=" +
           scheme_host_port_ + api_root_ + "/v1";
  if (error.find(kNoConnection) != std::string::npos)
    return "start the server, or fix the host and port of CUDAL1_OPENAI_BASE_URL (" + config_.base_url + ")";
  if (error.find("HTTP 401 ") != std::string::npos || error.find("HTTP 403 ") != std::string::npos)
    return "set OPENAI_API_KEY to a key the server accepts";
  return "check the server's log, and that CUDAL1_OPENAI_BASE_URL (" + config_.base_url + ") and CUDAL1_OPENAI_MODEL (" +
         config_.model + ") name it and a model it serves";
}

TokenAccounting OpenAIPolicy::accounting() const {
  std::lock_guard lock(accounting_mutex_);
  return totals_;
}

// The request as a chat (conversation_of), after the system prompt when there is one.
static json chat_messages(const OpenAIConfig& c, const PolicyRequest& request) {
  json messages = json::array();
  if (!c.system_prompt.empty()) messages.push_back({{"role", "system"}, {"content", c.system_prompt}});
  for (const ChatTurn& t : conversation_of(request)) messages.push_back({{"role", t.role}, {"content", t.content}});
  return messages;
}

std::vector<PolicyAnswer> OpenAIPolicy::answer(const PolicyRequest& request) {
  const json messages = chat_messages(config_, request);
  int n = std::max(request.count, 0);
  std::vector<PolicyAnswer> answers(n);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i; (i = next++) < n;) answers[i] = one_answer(messages, request.seed + i);
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < std::min(n, config_.max_concurrency); ++w) workers.emplace_back(work);
  for (auto& t : workers) t.join();
  return answers;
}

std::vector<std::vector<PolicyAnswer>> OpenAIPolicy::answer_each(const std::vector<PolicyRequest>& requests) {
  std::vector<std::vector<PolicyAnswer>> out(requests.size());
  std::atomic<std::size_t> next{0};
  // answer() holds no lock and each of its requests waits for one of the shared slots.
  auto work = [&] {
    for (std::size_t i; (i = next++) < requests.size();) out[i] = answer(requests[i]);
  };
  std::vector<std::thread> workers;
  for (std::size_t w = 0; w < std::min(requests.size(), std::size_t(config_.max_concurrency)); ++w) workers.emplace_back(work);
  for (auto& t : workers) t.join();
  return out;
}

// Never throws: an exception escaping a worker thread would end the process.
PolicyAnswer OpenAIPolicy::one_answer(const nlohmann::json& messages, uint64_t seed) {
  std::size_t sent = 0;
  PolicyAnswer a;
  try {
    a = attempt_until_done(messages, seed, sent);
  } catch (const std::exception& e) {
    a.error = std::string("the OpenAI client failed: ") + e.what();
  }
  a.label = config_.model;
  std::lock_guard lock(accounting_mutex_);
  totals_.prompt_tokens += a.prompt_tokens;
  totals_.completion_tokens += a.completion_tokens;
  totals_.requests += sent;
  totals_.failures += a.error.empty() ? 0 : 1;
  return a;
}

PolicyAnswer OpenAIPolicy::attempt_until_done(const nlohmann::json& messages, uint64_t seed, std::size_t& sent) {
  // Holds one of the max_concurrency slots for one request; released while backing off.
  struct Slot {
    OpenAIPolicy& p;
    explicit Slot(OpenAIPolicy& policy) : p(policy) {
      std::unique_lock lock(p.slots_mutex_);
      p.slot_freed_.wait(lock, [&] { return p.in_flight_ < p.config_.max_concurrency; });
      ++p.in_flight_;
    }
    ~Slot() {
      { std::lock_guard lock(p.slots_mutex_); --p.in_flight_; }
      p.slot_freed_.notify_one();
    }
  };
  const std::string url = scheme_host_port_ + path_;
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(config_.timeout_s));
  std::string last_failure;
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    bool with_seed = send_seed_.load();
    std::string body = request_body(config_, messages, with_seed ? std::optional(seed) : std::nullopt).dump();
    std::chrono::steady_clock::time_point started;  // once a slot is ours: waiting for one is no timeout
    httplib::Result result = [&] {
      Slot slot(*this);
      started = std::chrono::steady_clock::now();
      ++sent;
      httplib::Client client(scheme_host_port_);
      client.set_connection_timeout(std::min(timeout, std::chrono::microseconds(std::chrono::seconds(int(kMaxConnectS)))));
      client.set_read_timeout(timeout);
      client.set_write_timeout(timeout);
      httplib::Headers headers;
      if (!config_.api_key.empty()) headers.emplace("Authorization", "Bearer " + config_.api_key);
      return client.Post(path_, headers, body, "application/json");
    }();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::optional<double> wait_s;
    if (!result) {
      if (result.error() == httplib::Error::Read && took >= 0.9 * config_.timeout_s)
        last_failure = "no answer from " + url + " within " + seconds_text(config_.timeout_s) + " s (the request timeout)";
      else if (result.error() == httplib::Error::Connection)
        last_failure = kNoConnection + url;
      else
        last_failure = httplib::to_string(result.error()) + " (" + url + ")";
    } else if (result->status >= 200 && result->status < 300) {
      PolicyAnswer a;
      if (std::string wrong = read_completion(result->body, a); !wrong.empty())
        a.error = "HTTP " + std::to_string(result->status) + " from " + url + ": " + wrong;
      return a;
    } else {
      std::string said = server_message(result->body);
      std::string message = "HTTP " + std::to_string(result->status) + " from " + url + ": " + said;
      if (with_seed && (result->status == 400 || result->status == 422) && mentions_seed(said)) {
        send_seed_ = false;  // this server takes no seed: ask again without one, at no retry's cost
        --attempt;
        continue;
      }
      // A base URL without /v1 meets a 404 in every answer: the fix goes with each of them.
      if (result->status == 404) return failed(message + " (" + failure_hint(message) + ")");
      if (result->status != 429 && result->status < 500) return failed(message);
      last_failure = message;
      wait_s = retry_after_s(result.value());
    }
    if (attempt == config_.max_retries) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s.value_or(backoff_s(config_.backoff_base_s, attempt))));
  }
  return failed("gave up after " + std::to_string(config_.max_retries + 1) + " attempts: " + last_failure);
}

}  // namespace cudal1::policy

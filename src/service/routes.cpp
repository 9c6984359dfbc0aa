// service/routes.cpp — the reward service's HTTP endpoints (docs/serve.md): parsing and checking
// requests, storing jobs, answering with their fate.
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "policy/response.h"
#include "service/http_front.h"
#include "service/service.h"

using nlohmann::json;

namespace cudal1::service {

namespace {

// A request the client must fix: 400 with this message.
struct BadRequest {
  std::string message;
};

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // Client text that is not UTF-8 (a path, a field) is replaced, never a reason to throw.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
  reply(res, status, {{"error", message}});
}

// An answer given before the whole body was read: the rest of it is never read, so the connection
// cannot carry another request.
void close_after(httplib::Response& res) { res.set_header("Connection", "close"); }

void reply_too_large(httplib::Response& res, std::size_t max_body_bytes) {
  reply_error(res, 413, "the body is larger than the service takes (" + std::to_string(max_body_bytes >> 20) +
                            " MB, --max-body-mb); split a batch into smaller ones");
  close_after(res);
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") || std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > 0;
}

// The whole body into `body`, at most `max` bytes of it however it comes (with a length, chunked,
// compressed): httplib bounds only a declared length. False when it is larger.
bool read_bounded(const httplib::ContentReader& read, std::size_t max, std::string& body) {
  bool over = false;
  read([&](const char* data, std::size_t n) {
    if (body.size() + n > max) return !(over = true);
    body.append(data, n);
    return true;
  });
  return !over;
}

json parse_body(const httplib::Request& req) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) throw BadRequest{"the body is not JSON"};
  if (!body.is_object()) throw BadRequest{"the body must be a JSON object"};
  return body;
}

std::string text_field(const json& body, const char* key, const std::string& where, bool required) {
  if (!body.contains(key) || body[key].is_null()) {
    if (required) throw BadRequest{where + " lacks \"" + key + "\""};
    return {};
  }
  if (!body[key].is_string() || body[key].get<std::string>().empty())
    throw BadRequest{where + ": \"" + key + "\" must be a non-empty string"};
  return body[key].get<std::string>();
}

json job_reply(const Job& j) {
  return {{"job_id", j.id}, {"status", job_state_name(j.state)}, {"attempts", j.attempts},
          {"created_at", j.created_at}, {"updated_at", j.updated_at}};
}

bool finished(const Job& j) { return j.state == JobState::done || j.state == JobState::failed; }

}  // namespace

json RewardService::job_request(const json& body, const std::string& where) {
  if (!body.is_object()) throw BadRequest{where + " must be a JSON object"};
  const std::string task_id = text_field(body, "task_id", where, true);
  const std::string kernel = text_field(body, "kernel_code", where, true);
  const std::string reference = text_field(body, "reference_code", where, false);
  std::string task_path = reference.empty() ? task_file(task_id) : files_.put(reference);
  if (task_path.empty())
    throw BadRequest{where + ": task_id \"" + task_id + "\" is not a task of the bundled suite (such as level1/23_silu); "
                     "send its KernelBench source as \"reference_code\""};
  json r = {{"task_id", task_id}, {"task_path", task_path}, {"candidate_path", files_.put(kernel)}};
  for (const char* flag : {"timing", "baselines"}) {
    if (!body.contains(flag)) continue;
    if (!body[flag].is_boolean()) throw BadRequest{where + ": \"" + flag + "\" must be true or false"};
    r[flag] = body[flag];
  }
  return r;
}

bool RewardService::authorised(const httplib::Request& req, httplib::Response& res) const {
  if (config_.no_auth) return true;
  // The header, or ?token= for clients that cannot send one (OpenRLHF's --remote_rm_url).
  std::string got = req.get_header_value("Authorization");
  if (got.empty() && req.has_param("token")) got = "Bearer " + req.get_param_value("token");
  const std::string want = "Bearer " + config_.token;
  // Compared in full whatever the first difference, so timing says nothing about the token.
  bool same = got.size() == want.size();
  unsigned char diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(want[i] ^ (i < got.size() ? got[i] : 0));
  if (same && diff == 0) return true;
  res.set_header("WWW-Authenticate", "Bearer");
  reply_error(res, 401, got.empty() ? "no token: send Authorization: Bearer <token>" : "the token is not the service's");
  return false;
}

bool RewardService::admitted(const httplib::Request& req, httplib::Response& res) const {
  // The one endpoint open to all takes no body: a body it waited for would hold a thread.
  const bool open = req.path == "/healthz";
  if (open ? !has_body(req) : authorised(req, res)) return true;
  if (open) reply_error(res, 400, "GET /healthz takes no body");
  close_after(res);
  return false;
}

std::optional<std::vector<std::string>> RewardService::enqueue(const std::vector<json>& requests, httplib::Response& res,
                                                               const std::string& what) {
  if (int64_t(requests.size()) > config_.max_pending)
    throw BadRequest{what + " of " + std::to_string(requests.size()) + " can never fit a queue of " +
                     std::to_string(config_.max_pending) + " (--max-queue): split it"};
  if (std::optional<std::string> full = cluster_full()) {
    res.set_header("Retry-After", "30");
    reply_error(res, 429, *full + ": nothing was stored; try again after Retry-After seconds");
    return std::nullopt;
  }
  auto ids = jobs_.submit(requests, config_.max_pending);
  if (!ids) {
    res.set_header("Retry-After", std::to_string(retry_after_s()));
    reply_error(res, 429, "the queue is full (" + std::to_string(config_.max_pending) + " jobs pending at most): nothing was stored; "
                          "try again after Retry-After seconds");
    return std::nullopt;
  }
  wake_.notify_all();
  return ids;
}

void RewardService::submit(const std::vector<json>& requests, httplib::Response& res, bool batch) {
  auto ids = enqueue(requests, res, "a batch");
  if (!ids) return;
  if (batch) reply(res, 202, {{"job_ids", *ids}, {"status", "queued"}});
  else reply(res, 202, {{"job_id", ids->front()}, {"status", "queued"}});
}

void RewardService::reward(const httplib::Request& req, httplib::Response& res) {
  json body = parse_body(req);
  if (!body.contains("query") || !body["query"].is_array()) throw BadRequest{"the body lacks the \"query\" list"};
  const json& query = body["query"];
  const json prompts = body.value("prompts", json::array()), labels = body.value("labels", json::array());
  if (!labels.is_array() || labels.size() != query.size())
    throw BadRequest{"\"labels\" must list a task for each query (a bundled task id, or the task's KernelBench source)"};
  std::vector<json> requests;
  std::vector<int> job_of(query.size(), -1);  // the request of each query; -1: no code, no job
  std::vector<std::string> outcome(query.size());
  for (std::size_t i = 0; i < query.size(); ++i) {
    const std::string where = "query[" + std::to_string(i) + "]";
    if (!query[i].is_string()) throw BadRequest{where + " must be a string"};
    if (!labels[i].is_string()) throw BadRequest{"labels[" + std::to_string(i) + "] must be a string"};
    std::string response = query[i];
    if (prompts.is_array() && i < prompts.size() && prompts[i].is_string()) {
      const std::string p = prompts[i];
      if (response.compare(0, p.size(), p) == 0) response = response.substr(p.size());
    }
    policy::ParsedResponse parsed = policy::parse_response(response);
    outcome[i] = policy::response_outcome_name(parsed.outcome);
    if (parsed.outcome != policy::ResponseOutcome::ok) continue;
    const std::string label = labels[i];
    json one = {{"task_id", label}, {"kernel_code", parsed.code}};
    // A task's source spans lines; a one-line label that names no bundled task is a mistyped id,
    // which would otherwise come back as a silent reward of 0 for every sample.
    if (task_file(label).empty()) {
      if (label.find('\n') == std::string::npos)
        throw BadRequest{"labels[" + std::to_string(i) + "]: \"" + label + "\" is not a task of the bundled suite "
                         "(such as level1/23_silu) nor a task's KernelBench source"};
      one = {{"task_id", "reward"}, {"reference_code", label}, {"kernel_code", parsed.code}};
    }
    job_of[i] = int(requests.size());
    requests.push_back(job_request(one, "labels[" + std::to_string(i) + "]"));
  }
  std::vector<std::string> ids;
  if (!requests.empty()) {
    auto got = enqueue(requests, res, "a call with answers");
    if (!got) return;
    ids = *got;
  }
  // Waits for every job; a client that gives up can still follow them by id.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.reward_timeout_s);
  std::vector<Job> jobs(ids.size());
  for (;;) {
    bool all = true;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      if (!finished(jobs[k])) jobs[k] = jobs_.get(ids[k]).value_or(Job{});
      all = all && finished(jobs[k]);
    }
    if (all) break;
    if (stopping_) {  // the jobs stay queued and run at the next start
      res.set_header("Retry-After", "30");
      reply(res, 503, {{"error", "the service is stopping; follow the jobs with GET /results/{job_id} once it is back"},
                       {"job_ids", ids}});
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      reply(res, 504, {{"error", "the evaluations did not finish in time; follow them with GET /results/{job_id}"},
                       {"job_ids", ids}});
      return;
    }
    std::unique_lock lock(wake_m_);
    wake_.wait_for(lock, std::chrono::milliseconds(200));
  }
  json rewards = json::array(), correct = json::array(), speedup = json::array(), verdict = json::array(), job_ids = json::array();
  for (std::size_t i = 0; i < query.size(); ++i) {
    if (job_of[i] < 0) {
      rewards.push_back(0.0), correct.push_back(false), speedup.push_back(nullptr), verdict.push_back(outcome[i]);
      job_ids.push_back(nullptr);
      continue;
    }
    const Job& j = jobs[std::size_t(job_of[i])];
    const bool done = j.state == JobState::done;
    rewards.push_back(done ? j.outcome.value("reward", 0.0) : 0.0);
    correct.push_back(done && j.outcome.value("correct", false));
    speedup.push_back(done ? j.outcome.value("speedup", json(nullptr)) : json(nullptr));
    verdict.push_back(done ? j.outcome.value("verdict", std::string()) : std::string("failed"));
    job_ids.push_back(j.id);
  }
  reply(res, 200, {{"rewards", rewards}, {"scores", rewards},
                   {"extra_logs", {{"correct", correct}, {"speedup", speedup}, {"verdict", verdict}, {"job_id", job_ids}}}});
}

void RewardService::routes() {
  // The token is checked as soon as the headers are in, before any body is read or any handler runs;
  // a client that announces its body and waits for 100 Continue gets the refusal instead.
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return admitted(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
  });
  http_->set_expect_100_continue_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return admitted(req, res) ? 100 : res.status; });
  // Every handler answers a BadRequest with 400 and anything else unexpected with 500, never a crash.
  auto guarded = [](auto handler) {
    return [handler](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const BadRequest& e) {
        reply_error(res, 400, e.message);
      } catch (const Error& e) {
        reply_error(res, 500, e.describe());
      } catch (const std::exception& e) {
        reply_error(res, 500, std::string("internal error: ") + e.what());
      }
    };
  };
  // A body is read within its bound before it is judged; one over the bound is answered at the
  // bound, and the connection closed (http_front.h keeps the answer from being lost to a reset).
  auto with_body = [this](auto handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
      httplib::Request whole = req;
      // A declared length over the bound: httplib reads past it without handing anything over.
      const bool declared_over =
          std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > config_.max_body_bytes;
      if (!read_bounded(read, config_.max_body_bytes, whole.body) || declared_over)
        return reply_too_large(res, config_.max_body_bytes);
      handler(whole, res);
    };
  };
  auto post = [this, with_body, guarded](const char* path, auto handler) {
    http_->Post(path, with_body(guarded(handler)));
  };
  post("/evaluate", [this](const httplib::Request& req, httplib::Response& res) {
    submit({job_request(parse_body(req), "the body")}, res, false);
  });
  post("/evaluate/batch", [this](const httplib::Request& req, httplib::Response& res) {
    json body = parse_body(req);
    if (!body.contains("requests") || !body["requests"].is_array() || body["requests"].empty())
      throw BadRequest{"the body needs a non-empty \"requests\" list of evaluate bodies"};
    std::vector<json> requests;
    for (std::size_t i = 0; i < body["requests"].size(); ++i)
      requests.push_back(job_request(body["requests"][i], "requests[" + std::to_string(i) + "]"));
    submit(requests, res, true);
  });
  http_->Get(R"(/status/([^/]+))", guarded([this](const httplib::Request& req, httplib::Response& res) {
    auto job = jobs_.get(req.matches[1]);
    if (!job) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    reply(res, 200, job_reply(*job));
  }));
  http_->Get(R"(/results/([^/]+))", guarded([this](const httplib::Request& req, httplib::Response& res) {
    auto job = jobs_.get(req.matches[1]);
    if (!job) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    json body = job_reply(*job);
    if (!finished(*job)) return reply(res, 202, body);
    body.update(job->outcome);
    reply(res, 200, body);
  }));
  post("/reward", [this](const httplib::Request& req, httplib::Response& res) { reward(req, res); });
  http_->Get("/healthz", guarded([this](const httplib::Request&, httplib::Response& res) {
    JobCounts c = jobs_.counts();
    reply(res, 200, {{"ok", true}, {"queued", c.queued}, {"running", c.running}});
  }));
  http_->Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  }));
  // Errors httplib answers itself (a declared length over the limit, an unknown path) still get a
  // JSON reason.
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 413)
      reply_too_large(res, config_.max_body_bytes);
    else if (res.status == 404 && res.body.empty())
      reply_error(res, 404, "no endpoint " + req.method + " " + req.path + " (see docs/serve.md)");
  });
  auto not_allowed = with_body([](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "GET, POST");
    reply_error(res, 405, "the service takes GET and POST only (see docs/serve.md)");
  });
  http_->Put(".*", not_allowed);
  http_->Patch(".*", not_allowed);
  http_->Delete(".*", not_allowed);
}

}  // namespace cudal1::service

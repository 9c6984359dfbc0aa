#include "cluster/redis_client.h"

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <regex>

#include "core/error.h"

namespace cudal1 {

namespace {

// The connection itself failed (not a command the server refused): worth reconnecting.
class RedisConnectionLost : public Error {
 public:
  using Error::Error;
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::array;
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      break;  // nil
  }
  return out;
}

timeval to_timeval(double s) {
  timeval tv{};
  tv.tv_sec = long(s);
  tv.tv_usec = long((s - double(tv.tv_sec)) * 1e6);
  return tv;
}

// Longest a command may take before the connection counts as lost; blocking reads ask for less.
constexpr double kCommandTimeoutS = 30;

}  // namespace

RedisEndpoint RedisEndpoint::parse(const std::string& url) {
  static const std::regex with_credentials(R"(^rediss?://[^/]*@.*$)");
  if (std::regex_match(url, with_credentials))
    throw Error(
        ErrorKind::usage,
        "the Redis URL carries credentials, which every user of this host can read in `ps`",
        "write redis://HOST:PORT and put the password in CUDAL1_REDIS_PASSWORD (and an ACL user in "
        "CUDAL1_REDIS_USERNAME)");
  static const std::regex form(
      R"(^redis://([A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\])(:([0-9]{1,5}))?(/([0-9]{1,2}))?/?$)");
  std::smatch m;
  if (!std::regex_match(url, m, form))
    throw Error(
        ErrorKind::usage, "'" + url + "' is not a Redis URL cudal1 can use",
        "write redis://HOST[:PORT][/DB], for example redis://10.0.0.5:6379 (TLS is not supported)");
  RedisEndpoint e;
  e.host = m[1].str();
  if (e.host.front() == '[') e.host = e.host.substr(1, e.host.size() - 2);
  if (m[3].matched) e.port = std::stoi(m[3].str());
  if (m[5].matched) e.db = std::stoi(m[5].str());
  if (e.port < 1 || e.port > 65535)
    throw Error(ErrorKind::usage,
                "port " + std::to_string(e.port) + " in '" + url + "' is out of range",
                "use 1 to 65535");
  e.username = env_or_empty("CUDAL1_REDIS_USERNAME");
  e.password = env_or_empty("CUDAL1_REDIS_PASSWORD");
  return e;
}

std::string RedisEndpoint::url() const {
  bool v6 = host.find(':') != std::string::npos;
  return "redis://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) +
         (db ? "/" + std::to_string(db) : "");
}

RedisConnection::RedisConnection(redisContext* context, RedisEndpoint endpoint)
    : context_(context), endpoint_(std::move(endpoint)) {}

RedisConnection::RedisConnection(RedisConnection&& o) noexcept
    : context_(o.context_), endpoint_(std::move(o.endpoint_)), broken_(o.broken_) {
  o.context_ = nullptr;
}

RedisConnection& RedisConnection::operator=(RedisConnection&& o) noexcept {
  if (this != &o) {
    if (context_) redisFree(context_);
    context_ = o.context_;
    endpoint_ = std::move(o.endpoint_);
    broken_ = o.broken_;
    o.context_ = nullptr;
  }
  return *this;
}

RedisConnection::~RedisConnection() {
  if (context_) redisFree(context_);
}

RedisConnection RedisConnection::open(const RedisEndpoint& endpoint, double timeout_s) {
  redisContext* c =
      redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, to_timeval(timeout_s));
  if (!c || c->err) {
    std::string why = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    throw RedisConnectionLost(
        ErrorKind::connection, "cannot reach Redis at " + endpoint.url() + ": " + why,
        "start redis-server there, or check the host, the port and the firewall between");
  }
  redisSetTimeout(c, to_timeval(kCommandTimeoutS));
  RedisConnection conn(c, endpoint);
  if (!endpoint.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!endpoint.username.empty()) auth.push_back(endpoint.username);
    auth.push_back(endpoint.password);
    try {
      conn.command(auth);
    } catch (const Error& e) {
      if (redis_connection_lost(e)) throw;
      throw Error(ErrorKind::connection,
                  "Redis at " + endpoint.url() +
                      " refused the credentials from CUDAL1_REDIS_PASSWORD" +
                      (endpoint.username.empty() ? "" : " for user '" + endpoint.username + "'") +
                      ": " + e.message(),
                  "set CUDAL1_REDIS_PASSWORD (and CUDAL1_REDIS_USERNAME for an ACL user) to what "
                  "the server expects");
    }
  }
  try {
    conn.command({"PING"});
    if (endpoint.db) conn.command({"SELECT", std::to_string(endpoint.db)});
  } catch (const Error& e) {
    if (redis_connection_lost(e) || e.message().find("NOAUTH") == std::string::npos) throw;
    throw Error(
        ErrorKind::connection,
        "Redis at " + endpoint.url() + " wants credentials and none were given",
        "set CUDAL1_REDIS_PASSWORD (and CUDAL1_REDIS_USERNAME for an ACL user) in the environment");
  }
  return conn;
}

RedisReply RedisConnection::command(const std::vector<std::string>& argv) {
  if (!context_ || broken_)
    throw RedisConnectionLost(ErrorKind::connection,
                              "the connection to Redis at " + endpoint_.url() + " is closed",
                              "open a new one");
  std::vector<const char*> args;
  std::vector<std::size_t> lens;
  for (auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(context_, int(args.size()), args.data(), lens.data()));
  if (!r) {
    broken_ = true;
    throw RedisConnectionLost(
        ErrorKind::connection,
        "lost the connection to Redis at " + endpoint_.url() + " during " + argv.front() + ": " +
            context_->errstr,
        "check that redis-server is running; cudal1 reconnects on its own for a while");
  }
  std::unique_ptr<redisReply, void (*)(void*)> owned(r, freeReplyObject);
  if (r->type == REDIS_REPLY_ERROR && std::string(r->str, r->len).rfind("LOADING", 0) == 0) {
    broken_ = true;  // a restarted server still reading its append-only file: ask again soon
    throw RedisConnectionLost(ErrorKind::connection,
                              "Redis at " + endpoint_.url() + " is still loading its data",
                              "wait for it; cudal1 reconnects on its own for a while");
  }
  if (r->type == REDIS_REPLY_ERROR)
    throw Error(ErrorKind::connection,
                "Redis refused " + argv.front() + ": " + std::string(r->str, r->len),
                "see the server's log; a full server (maxmemory) or a missing permission for this "
                "ACL user are common causes");
  return convert(r);
}

bool redis_connection_lost(const std::exception& error) {
  return dynamic_cast<const RedisConnectionLost*>(&error) != nullptr;
}

}  // namespace cudal1

namespace cudal1 {

RedisSession::RedisSession(RedisEndpoint endpoint, double patience_s)
    : endpoint_(std::move(endpoint)), patience_s_(patience_s) {}

void RedisSession::connect() {
  if (!connection_ || connection_->broken()) connection_.emplace(RedisConnection::open(endpoint_));
}

RedisReply RedisSession::command(const std::vector<std::string>& argv) {
  auto start = std::chrono::steady_clock::now();
  double pause_s = 0.2;
  for (;;) {
    try {
      connect();
      return connection_->command(argv);
    } catch (const Error& e) {
      if (!redis_connection_lost(e)) throw;
      connection_.reset();
      double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited + pause_s > patience_s_) throw;
      std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
      pause_s = std::min(pause_s * 2, 5.0);
    }
  }
}

}  // namespace cudal1

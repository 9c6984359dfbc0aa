// cluster/redis_client.h — a connection to the Redis server that carries evaluation jobs
// between hosts (docs/scale-out.md), over Debian's hiredis.
//
// Defines RedisEndpoint (where the server is, and the credentials, which come from the
// environment only), RedisReply (a reply as plain values, so callers never touch hiredis) and
// RedisConnection (one connection: not thread-safe; each thread opens its own).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct redisContext;

namespace cudal1 {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  // From CUDAL1_REDIS_USERNAME and CUDAL1_REDIS_PASSWORD (an ACL user, or requirepass alone):
  // never from the command line, where `ps` would show them to every user of the host.
  std::string username, password;

  // "redis://HOST[:PORT][/DB]". Throws Error(usage) for another scheme, a bad port or database,
  // and for credentials written in the URL (they belong in the environment).
  static RedisEndpoint parse(const std::string& url);
  std::string url() const;  // without credentials: safe to print
};

struct RedisReply {
  enum class Type { nil, string, integer, array, status };
  Type type = Type::nil;
  std::string str;  // string and status
  int64_t integer = 0;
  std::vector<RedisReply> elements;

  bool is_nil() const { return type == Type::nil; }
};

class RedisConnection {
 public:
  // Connects (within `timeout_s`), authenticates and selects the database. Throws
  // Error(connection) saying which: unreachable, credentials refused, or no credentials given
  // to a server that wants them.
  static RedisConnection open(const RedisEndpoint& endpoint, double timeout_s = 5);
  RedisConnection(RedisConnection&&) noexcept;
  RedisConnection& operator=(RedisConnection&&) noexcept;
  ~RedisConnection();

  // One command, its arguments sent as they are (binary-safe). A reply of the error type is
  // thrown as Error(connection) naming the command; so is a broken connection, after which
  // broken() is true and the connection must be opened again.
  RedisReply command(const std::vector<std::string>& argv);
  bool broken() const { return broken_; }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  RedisConnection(redisContext* context, RedisEndpoint endpoint);
  redisContext* context_ = nullptr;
  RedisEndpoint endpoint_;
  bool broken_ = false;
};

// Whether `error` came from the connection itself (the server went away), not from a command
// the server refused: the caller may open a new connection and try again.
bool redis_connection_lost(const std::exception& error);

}  // namespace cudal1

namespace cudal1 {

// A connection that opens itself again when the server goes away (a restart, a failover): each
// command is retried on a fresh connection, with a growing pause, for up to `patience_s`; past
// that, or for a command the server refuses, the error is thrown. Not thread-safe.
class RedisSession {
 public:
  explicit RedisSession(RedisEndpoint endpoint, double patience_s = 120);
  RedisReply command(const std::vector<std::string>& argv);
  // Opens the connection now, so bad credentials are said at start rather than at the first job.
  void connect();

 private:
  RedisEndpoint endpoint_;
  double patience_s_;
  std::optional<RedisConnection> connection_;
};

}  // namespace cudal1

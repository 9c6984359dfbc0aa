#include "cluster/job_stream.h"

#include "core/error.h"

namespace cudal1 {

void ensure_job_group(RedisSession& redis, const ClusterKeys& keys) {
  try {
    redis.command({"XGROUP", "CREATE", keys.stream(), ClusterKeys::kGroup, "0", "MKSTREAM"});
  } catch (const Error& e) {
    if (e.message().find("BUSYGROUP") == std::string::npos) throw;  // it exists: what we wanted
  }
}

void put_blob(RedisSession& redis, const ClusterKeys& keys, const std::string& sha256,
              const std::string& content) {
  const std::string key = keys.blob(sha256), ttl = std::to_string(kBlobTtlS);
  RedisReply set = redis.command({"SET", key, content, "NX", "EX", ttl});
  if (set.is_nil()) redis.command({"EXPIRE", key, ttl});
}

std::optional<std::string> push_job_if_room(RedisSession& redis, const ClusterKeys& keys,
                                            const std::string& job_json, int64_t max_queued) {
  static const char* kScript =
      "if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return false end "
      "return redis.call('XADD', KEYS[1], '*', 'job', ARGV[2])";
  RedisReply r =
      redis.command({"EVAL", kScript, "1", keys.stream(), std::to_string(max_queued), job_json});
  if (r.is_nil()) return std::nullopt;
  return r.str;
}

int64_t stream_length(RedisSession& redis, const ClusterKeys& keys) {
  return redis.command({"XLEN", keys.stream()}).integer;
}

std::optional<StreamEntry> first_entry(const RedisReply& entries) {
  for (const RedisReply& e : entries.elements) {
    if (e.elements.size() < 2 || e.elements[1].type != RedisReply::Type::array) continue;
    const auto& fields = e.elements[1].elements;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2)
      if (fields[i].str == "job") return StreamEntry{e.elements[0].str, fields[i + 1].str};
    return StreamEntry{e.elements[0].str, ""};  // not a job: the worker drops it, saying so
  }
  return std::nullopt;
}

}  // namespace cudal1

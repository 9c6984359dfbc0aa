// cluster/job_stream.h — the operations on the job stream that producers, workers and the
// status readers share, each one or two Redis commands (docs/scale-out.md, "Failure semantics").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cluster/keys.h"
#include "cluster/redis_client.h"

namespace cudal1 {

// Creates the stream and its consumer group when missing (from the stream's start, so jobs
// pushed before the first worker came are delivered too). Safe to call from every process.
void ensure_job_group(RedisSession& redis, const ClusterKeys& keys);

// Stores a file by content unless it is there already; either way it lives kBlobTtlS more.
void put_blob(RedisSession& redis, const ClusterKeys& keys, const std::string& sha256,
              const std::string& content);

// Adds the job to the stream unless it holds `max_queued` entries already; the check and the add
// are one server-side script, so producers pushing at once never overshoot the bound. Returns the
// entry's id, or nullopt when the stream is full.
std::optional<std::string> push_job_if_room(RedisSession& redis, const ClusterKeys& keys,
                                            const std::string& job_json, int64_t max_queued);

// Entries in the stream: jobs waiting plus jobs a worker holds (acknowledged jobs are deleted).
int64_t stream_length(RedisSession& redis, const ClusterKeys& keys);

// One entry handed to a worker: its stream id and the job's JSON text (empty: the entry holds
// no job field, and is dropped).
struct StreamEntry {
  std::string stream_id, job;
};

// The first entry of an XREADGROUP or XAUTOCLAIM reply's entry list, if any (a deleted entry,
// whose fields are nil, counts as none).
std::optional<StreamEntry> first_entry(const RedisReply& entries);

}  // namespace cudal1

// cluster/keys.h — the Redis keys one cluster uses. Every producer and worker of a cluster
// must agree on them; the prefix keeps clusters (or test runs) that share a server apart.
//
//   <p>jobs              stream of jobs; the consumer group "workers" hands each to one worker
//   <p>blob:<sha256>     a task or candidate file, by content (expires unused)
//   <p>result:<job id>   the job's outcome, written once (SET NX)
//   <p>done:<job id>     a list its producer blocks on until the outcome is there
//   <p>worker:<name>     a worker's heartbeat: its lanes and counts (expires when it stops beating)
//   <p>workers           names of every worker that has started
//   <p>stats:<name>      counters: results, retries, abandoned
#pragma once

#include <string>

namespace cudal1 {

struct ClusterKeys {
  std::string prefix = "cudal1:";

  static constexpr const char* kGroup = "workers";
  std::string stream() const { return prefix + "jobs"; }
  std::string blob(const std::string& sha256) const { return prefix + "blob:" + sha256; }
  std::string result(const std::string& job_id) const { return prefix + "result:" + job_id; }
  std::string done(const std::string& job_id) const { return prefix + "done:" + job_id; }
  std::string worker(const std::string& name) const { return prefix + "worker:" + name; }
  std::string workers() const { return prefix + "workers"; }
  std::string stat(const std::string& name) const { return prefix + "stats:" + name; }
};

// How long what a cluster leaves in Redis lives: files and results expire unless used.
inline constexpr int kBlobTtlS = 7 * 24 * 3600;
inline constexpr int kResultTtlS = 24 * 3600;
inline constexpr int kResultReadTtlS = 3600;  // once its producer has read it

}  // namespace cudal1

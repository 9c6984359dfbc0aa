// cluster/remote_job.h — what travels between a producer and a worker through Redis: the job
// (the evaluation's protocol and limits, and its two files by content hash) and its outcome (the
// same EvalResult `cudal1 eval` gives, or the error that stopped it).
//
// Files travel once: each is stored under its SHA-256 and a job names it by that hash, so a
// candidate evaluated again, or a task shared by a thousand candidates, is sent once. What stays
// on the producer's host (the results store, its protected files, its task facts) does not
// travel: a worker uses its own host's.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "evaluator/options.h"
#include "evaluator/result.h"

namespace cudal1 {

// Largest task or candidate file a job may carry; a KernelBench file is a few kilobytes.
inline constexpr std::size_t kMaxJobFileBytes = 1u << 20;

struct JobFile {
  std::string name;    // the file's base name on the producer (results name tasks by it)
  std::string sha256;  // of the content
};

struct RemoteJob {
  std::string id;        // unique over the cluster; its result is stored under it
  std::string producer;  // host and process that pushed it, for the workers' logs
  EvalOptions options;   // protocol and limits; paths, device and scheduling are the worker's
  JobFile task, candidate;

  nlohmann::json to_json() const;
  // Throws Error(input) naming the field that is missing or malformed.
  static RemoteJob from_json(const nlohmann::json& j);
};

// The protocol and limits of `options`, without what belongs to one host (paths, device,
// python, protected files, scheduling).
nlohmann::json protocol_to_json(const EvalOptions& options);
// Sets them on `options` (a worker's defaults); throws Error(input) on a malformed field.
void protocol_from_json(const nlohmann::json& j, EvalOptions& options);

// Reads a file for a job: Error(input) when it is missing or over kMaxJobFileBytes.
std::string read_job_file(const std::string& path, const char* role);

// A file name safe to write under a worker's folder: the base name, reduced to [A-Za-z0-9._-].
std::string safe_file_name(const std::string& name, const char* fallback);

struct RemoteOutcome {
  std::optional<EvalResult> result;
  std::optional<Error> error;  // the evaluation could not run
  std::string worker, device;  // who evaluated it, on which of its lanes
  double run_s = 0, prebuild_s = 0;

  nlohmann::json to_json() const;
  static RemoteOutcome from_json(const nlohmann::json& j);  // throws Error(input)
};

nlohmann::json error_to_json(const Error& e);
Error error_from_json(const nlohmann::json& j);

}  // namespace cudal1

#include "cluster/remote_job.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

namespace {

template <typename T>
void take(const json& j, const char* key, T& into) {
  if (!j.contains(key)) return;
  try {
    into = j.at(key).get<T>();
  } catch (const json::exception& e) {
    throw Error(ErrorKind::input,
                std::string("the job's field '") + key + "' is malformed: " + e.what(),
                "producer and worker must run the same cudal1 version");
  }
}

JobFile file_from_json(const json& j, const char* role) {
  if (!j.is_object() || !j.contains("sha256") || !j.contains("name"))
    throw Error(ErrorKind::input, std::string("the job names no ") + role + " file",
                "producer and worker must run the same cudal1 version");
  return {j.at("name").get<std::string>(), j.at("sha256").get<std::string>()};
}

}  // namespace

json protocol_to_json(const EvalOptions& o) {
  json j = {{"tolerance", tolerance_mode_name(o.tolerance)},
            {"timing", o.timing},
            {"buckets", o.buckets},
            {"calls_per_bucket", o.calls_per_bucket},
            {"warmup", o.warmup},
            {"spread_limit", o.spread_limit},
            {"max_remeasure", o.max_remeasure},
            {"noisy_retries", o.noisy_retries},
            {"fresh_remeasure_above", o.fresh_remeasure_above},
            {"best_known_factor", o.best_known_factor},
            {"remeasure_disagreement", o.remeasure_disagreement},
            {"sample_elements", o.sample_elements},
            {"verify_fraction", o.verify_fraction},
            {"verify_min", o.verify_min},
            {"precision_check", o.precision_check},
            {"allow_reduced_precision", o.allow_reduced_precision},
            {"attribution", o.attribution},
            {"lint", o.lint},
            {"baselines", o.baselines},
            {"baseline_names", o.baseline_names},
            {"reuse_extension_builds", o.reuse_extension_builds},
            {"extra_env", o.extra_env},
            {"build_timeout_s", o.build_timeout_s},
            {"memory_limit_mb", o.memory_limit_mb},
            {"output_limit_kb", o.output_limit_kb}};
  if (o.seed) j["seed"] = *o.seed;
  if (o.best_known_speedup) j["best_known_speedup"] = *o.best_known_speedup;
  if (o.call_timeout_s) j["call_timeout_s"] = *o.call_timeout_s;
  return j;
}

void protocol_from_json(const json& j, EvalOptions& o) {
  if (!j.is_object())
    throw Error(ErrorKind::input, "the job's protocol is not an object",
                "producer and worker must run the same cudal1 version");
  std::string tolerance = tolerance_mode_name(o.tolerance);
  take(j, "tolerance", tolerance);
  if (tolerance == tolerance_mode_name(ToleranceMode::strict)) {
    o.tolerance = ToleranceMode::strict;
  } else if (tolerance == tolerance_mode_name(ToleranceMode::standard)) {
    o.tolerance = ToleranceMode::standard;
  } else {
    throw Error(ErrorKind::input,
                "the job asks for tolerance '" + tolerance + "', which this worker does not know",
                "producer and worker must run the same cudal1 version");
  }
  take(j, "timing", o.timing);
  take(j, "buckets", o.buckets);
  take(j, "calls_per_bucket", o.calls_per_bucket);
  take(j, "warmup", o.warmup);
  take(j, "spread_limit", o.spread_limit);
  take(j, "max_remeasure", o.max_remeasure);
  take(j, "noisy_retries", o.noisy_retries);
  take(j, "fresh_remeasure_above", o.fresh_remeasure_above);
  take(j, "best_known_factor", o.best_known_factor);
  take(j, "remeasure_disagreement", o.remeasure_disagreement);
  take(j, "sample_elements", o.sample_elements);
  take(j, "verify_fraction", o.verify_fraction);
  take(j, "verify_min", o.verify_min);
  take(j, "precision_check", o.precision_check);
  take(j, "allow_reduced_precision", o.allow_reduced_precision);
  take(j, "attribution", o.attribution);
  take(j, "lint", o.lint);
  take(j, "baselines", o.baselines);
  take(j, "baseline_names", o.baseline_names);
  take(j, "reuse_extension_builds", o.reuse_extension_builds);
  take(j, "extra_env", o.extra_env);
  take(j, "build_timeout_s", o.build_timeout_s);
  take(j, "memory_limit_mb", o.memory_limit_mb);
  take(j, "output_limit_kb", o.output_limit_kb);
  if (j.contains("seed")) o.seed = j.at("seed").get<uint64_t>();
  if (j.contains("best_known_speedup"))
    o.best_known_speedup = j.at("best_known_speedup").get<double>();
  if (j.contains("call_timeout_s")) o.call_timeout_s = j.at("call_timeout_s").get<double>();
}

json RemoteJob::to_json() const {
  return {{"id", id},
          {"producer", producer},
          {"protocol", protocol_to_json(options)},
          {"task", {{"name", task.name}, {"sha256", task.sha256}}},
          {"candidate", {{"name", candidate.name}, {"sha256", candidate.sha256}}}};
}

RemoteJob RemoteJob::from_json(const json& j) {
  if (!j.is_object() || !j.contains("id") || !j.at("id").is_string())
    throw Error(ErrorKind::input, "the job has no id",
                "producer and worker must run the same cudal1 version");
  RemoteJob job;
  job.id = j.at("id").get<std::string>();
  take(j, "producer", job.producer);
  protocol_from_json(j.value("protocol", json::object()), job.options);
  job.task = file_from_json(j.value("task", json()), "task");
  job.candidate = file_from_json(j.value("candidate", json()), "candidate");
  return job;
}

std::string read_job_file(const std::string& path, const char* role) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    throw Error(ErrorKind::input,
                std::string("cannot read the ") + role + " file " + path + ": " + ec.message(),
                "check the path");
  if (size > kMaxJobFileBytes)
    throw Error(ErrorKind::input,
                std::string("the ") + role + " file " + path + " is " + std::to_string(size) +
                    " bytes, over the " + std::to_string(kMaxJobFileBytes >> 10) +
                    " KiB a job may carry to remote workers",
                "evaluate it locally (without --redis); KernelBench files are a few kilobytes");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof())
    throw Error(ErrorKind::input, std::string("cannot read the ") + role + " file " + path,
                "check its permissions");
  return s.str();
}

std::string safe_file_name(const std::string& name, const char* fallback) {
  std::string base = fs::path(name).filename().string(), out;
  for (char c : base)
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out[0] == '.') return fallback;
  return out;
}

json error_to_json(const Error& e) {
  return {{"kind", error_kind_name(e.kind())},
          {"message", e.message()},
          {"hint", e.hint()},
          {"context", e.context()}};
}

Error error_from_json(const json& j) {
  static const ErrorKind kinds[] = {ErrorKind::usage,   ErrorKind::input, ErrorKind::task,
                                    ErrorKind::runner,  ErrorKind::store, ErrorKind::connection,
                                    ErrorKind::internal};
  ErrorKind kind = ErrorKind::internal;
  std::string name = j.value("kind", "internal");
  for (ErrorKind k : kinds)
    if (name == error_kind_name(k)) kind = k;
  return Error(kind, j.value("message", "the remote evaluation failed"), j.value("hint", ""),
               j.value("context", ""));
}

json RemoteOutcome::to_json() const {
  json j = {{"worker", worker}, {"device", device}, {"run_s", run_s}, {"prebuild_s", prebuild_s}};
  if (result) j["result"] = result->to_json();
  if (error) j["error"] = error_to_json(*error);
  return j;
}

RemoteOutcome RemoteOutcome::from_json(const json& j) {
  RemoteOutcome o;
  try {
    o.worker = j.value("worker", "");
    o.device = j.value("device", "");
    o.run_s = j.value("run_s", 0.0);
    o.prebuild_s = j.value("prebuild_s", 0.0);
    if (j.contains("result")) o.result = EvalResult::from_json(j.at("result"));
    if (j.contains("error")) o.error = error_from_json(j.at("error"));
  } catch (const std::exception& e) {
    throw Error(ErrorKind::input, std::string("a worker's result cannot be read: ") + e.what(),
                "producer and worker must run the same cudal1 version");
  }
  if (!o.result && !o.error)
    throw Error(ErrorKind::input, "a worker's result holds neither a verdict nor an error",
                "producer and worker must run the same cudal1 version");
  return o;
}

}  // namespace cudal1

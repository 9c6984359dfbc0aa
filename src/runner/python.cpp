#include "runner/python.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/paths.h"
#include "runner/process.h"

namespace cudal1 {

namespace {

// find_spec only looks torch up (milliseconds), it does not import it (seconds). Started as a
// registered Process: a bare fork() here was once taken for a candidate's orphan and killed by a
// concurrent worker shutdown, and the batch then said no Python had torch.
bool has_torch(const std::string& python) {
  try {
    ProcessSpec ps;
    ps.argv = {python, "-c", "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)"};
    Process p(ps);
    std::string line;
    while (p.read_line(std::chrono::seconds(60), line) == WaitOutcome::line) {
    }
    p.kill_all();
    auto info = p.exit_info();
    return info && info->exited && info->exit_code == 0;
  } catch (const Error&) {
    return false;  // cannot start: not this interpreter
  }
}

std::string probe_python(const std::string& requested) {
  std::vector<std::string> candidates;
  std::string chosen_by;
  if (!requested.empty()) {
    candidates.push_back(requested);
    chosen_by = "--python";
  } else if (const char* env = std::getenv("CUDAL1_PYTHON"); env && *env) {
    candidates.push_back(env);
    chosen_by = "CUDAL1_PYTHON";
  } else {
    if (auto p = find_on_path("python3"); !p.empty()) candidates.push_back(p);
    candidates.push_back("/usr/bin/python3");
  }
  for (auto& c : candidates) {
    std::string resolved = c.find('/') == std::string::npos ? find_on_path(c) : c;
    if (!resolved.empty() && has_torch(resolved)) return resolved;
  }
  std::string list;
  for (auto& c : candidates) list += " " + c;
  throw Error(ErrorKind::runner, "no Python interpreter with PyTorch found",
              chosen_by.empty()
                  ? "install PyTorch (`make setup` installs Debian's python3-torch) or set "
                    "CUDAL1_PYTHON to an interpreter that has it"
                  : "the interpreter named by " + chosen_by + " cannot import torch",
              "tried:" + list);
}

}  // namespace

std::string find_python(const std::string& requested) {
  // Probed once per process and request: every evaluation asks, from several threads at once.
  static std::mutex mutex;
  static std::map<std::string, std::string> found;
  std::lock_guard<std::mutex> lock(mutex);
  std::string key = requested + "|" + (std::getenv("CUDAL1_PYTHON") ? std::getenv("CUDAL1_PYTHON") : "");
  if (auto it = found.find(key); it != found.end()) return it->second;
  std::string python = probe_python(requested);
  found.emplace(key, python);
  return python;
}

}  // namespace cudal1

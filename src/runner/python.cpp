#include "runner/python.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace cudal1 {

namespace {

// find_spec only looks torch up (milliseconds), it does not import it (seconds).
bool has_torch(const std::string& python) {
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execlp(python.c_str(), python.c_str(), "-c",
           "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)",
           (char*)nullptr);
    _exit(127);
  }
  if (pid < 0) return false;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto p = std::filesystem::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

}  // namespace

std::string find_python(const std::string& requested) {
  std::vector<std::string> candidates;
  std::string chosen_by;
  if (!requested.empty()) {
    candidates.push_back(requested);
    chosen_by = "--python";
  } else if (const char* env = std::getenv("CUDAL1_PYTHON"); env && *env) {
    candidates.push_back(env);
    chosen_by = "CUDAL1_PYTHON";
  } else {
    if (auto p = on_path("python3"); !p.empty()) candidates.push_back(p);
    candidates.push_back("/usr/bin/python3");
  }
  for (auto& c : candidates) {
    std::string resolved = c.find('/') == std::string::npos ? on_path(c) : c;
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

}  // namespace cudal1

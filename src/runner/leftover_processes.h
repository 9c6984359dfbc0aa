// runner/leftover_processes.h — for tests: the processes an evaluation may have left behind.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/process_tree.h"

namespace cudal1 {

// Every live (not zombie) process whose command line holds `marker`, or whose working folder
// lies under `dir` (a sandbox's scratch is its working folder there and here alike).
inline std::vector<pid_t> leftover_processes(const std::string& marker, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<pid_t> out;
  for (auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::stringstream cmd;
    cmd << in.rdbuf();
    std::error_code ec;
    fs::path cwd = fs::read_symlink(e.path() / "cwd", ec);
    bool under = !ec && !dir.empty() && cwd.string().rfind(dir.string(), 0) == 0;
    auto st = read_proc_stat(std::stoi(name));
    if (!st || st->state == 'Z') continue;
    if (cmd.str().find(marker) != std::string::npos || under) out.push_back(st->pid);
  }
  return out;
}

}  // namespace cudal1

// cli/cli_run.h — test support, not part of cudal1: the CLI run as a user runs it, its stdout
// read, its stderr written to a file (so not a terminal) and read back, and its exit status.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/fixture_cases.h"

namespace cudal1::test {

// A file of the test fixtures (tests/fixtures/REL) as a path string for a command line.
inline std::string fixture(const std::string& rel) { return (cudal1::fixtures_dir() / rel).string(); }

struct CliRun {
  int exit_code;
  std::string out, err;
};

// `env`: assignments put before the command ("A=1 B=2"), for this run only.
inline CliRun run_cli(const std::string& args, const std::string& env = "") {
  namespace fs = std::filesystem;
  fs::path err_file = fs::temp_directory_path() / ("cudal1_cli_err_" + std::to_string(::getpid()));
  std::string cmd = env + (env.empty() ? "" : " ") + std::string(CUDAL1_BINARY) + " " + args + " 2>" + err_file.string();
  FILE* p = popen(cmd.c_str(), "r");
  CliRun r{-1, "", ""};
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  fs::remove(err_file);
  return r;
}

// stdout must hold exactly one JSON object and nothing else.
inline nlohmann::json only_json(const std::string& out) {
  std::istringstream lines(out);
  std::string line, first;
  int count = 0;
  while (std::getline(lines, line))
    if (!line.empty()) {
      ++count;
      first = line;
    }
  EXPECT_EQ(count, 1) << "stdout:\n" << out.substr(0, 2000);
  return nlohmann::json::parse(first);
}

}  // namespace cudal1::test

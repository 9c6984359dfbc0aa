// evaluator/fixture_cases.h — the test corpus's contract: each candidate file under
// tests/fixtures states, in header comments, its task and the verdict it must get.
//
//   # task: gemm_relu.py          file under tests/fixtures/tasks/
//   # expect-status: ok           or # expect-status-any: crash,runtime_error
//   # expect-accepted: true
//   # expect-flag: input_mutated  (repeatable)
//   # device: cpu                 cpu cases run in `make test`, cuda cases in the GPU script
//   # family: timed_phase         the hack family it belongs to (docs/defences.md), or honest
//   # expect-max-speedup: 1.5     a hack the protocol neutralises: accepted, but with no gain
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace cudal1 {

struct FixtureCase {
  std::filesystem::path candidate, task;
  std::vector<std::string> statuses;  // any of these is right
  bool accepted = false;
  std::vector<std::string> flags;
  std::string device = "cpu";
  std::string why;
  std::string family = "unclassified";
  double max_speedup = 0;             // 0: no bound
  bool builds_extension = false;      // uses load_inline: needs a long build timeout
  std::string name() const;           // file stem, usable as a test name
};

// Test frameworks print a case by its name.
inline void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.name(); }

// $CUDAL1_FIXTURES_DIR, else the source tree's tests/fixtures.
std::filesystem::path fixtures_dir();

// Every fixture under <fixtures>/<sub> whose device is `device`, sorted by name. Throws
// std::runtime_error naming the file whose header is incomplete.
std::vector<FixtureCase> load_fixture_cases(const std::string& sub, const std::string& device);

}  // namespace cudal1

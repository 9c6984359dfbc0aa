// policy/replay_policy.h — a policy that answers from a fixed kernel set instead of a model, so
// the loop, its rewards and its exports can be exercised and compared without one, and so a
// published kernel set (CUDA-L1's) can be fed through the loop.
//
// Sources, told apart by what the path is:
// - a CUDA-L1 JSON-lines file (tasks/cuda_l1.h). A row's kernels, in this order: custom_code
//   (CUDA-L1's ModelNew), then cuda_graph_code and cudnn_code (CUDA-L1's baseline variants).
//   Null, empty and "None" fields are not kernels. The variants define the task's `class Model`
//   made faster, not ModelNew, so `class ModelNew(Model): pass` is appended to one that lacks
//   ModelNew: the same code under the name the evaluator loads. Lines that are not rows are
//   skipped and counted (skipped_rows()).
// - a folder of ModelNew files: DIR/<task id>.py, then DIR/<task id>/*.py sorted by name.
//
// Which kernels belong to a request: those of the rows named request.task_id ("level1/task19");
// when no row has that name, those of the rows whose ref_code equals request.reference once both
// have "\n" line endings and no trailing whitespace on any line or at the end. A folder matches
// by task id only (a task id with ".." or an absolute path matches nothing).
//
// Each kernel is given once per policy object, in source order: successive calls continue where
// the last stopped and return fewer answers, then none, when the task's set runs dry. A kernel
// whose label is in request.answered_labels counts as given (a resumed run's earlier rounds).
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace cudal1::policy {

class ReplayPolicy : public Policy {
 public:
  // Throws Error(input) when `source` is missing or cannot be read.
  explicit ReplayPolicy(const std::filesystem::path& source);

  std::string name() const override;  // "replay:<source file name>"
  // Each answer: the three sections response.h parses, the kernel in a ```python block (ending
  // in "\n"); label "replay:<source file name>:<row name>:<field>" or
  // "replay:<folder name>:<file path under the folder>"; finish_reason "stop"; no tokens.
  // parse_response ends a block at any line starting with ``` whatever its length, so a kernel
  // holding such a line cannot come back whole: its answer carries `error` instead of a kernel
  // the parser would cut short.
  std::vector<PolicyAnswer> answer(const PolicyRequest& request) override;

  std::size_t skipped_rows() const { return skipped_rows_; }

  struct Kernel {
    std::string key;     // what "already given" remembers
    std::string label;
    std::string origin;  // for the answer's analysis: where the code comes from
    std::string code;
  };

 private:
  struct Row {
    std::string name, reference;  // reference normalised as above
    std::vector<Kernel> kernels;
  };

  std::vector<Kernel> folder_kernels(const std::string& task_id) const;
  std::vector<Kernel> row_kernels(const PolicyRequest& request) const;

  std::filesystem::path source_;
  bool folder_ = false;
  std::vector<Row> rows_;
  std::size_t skipped_rows_ = 0;
  std::mutex mutex_;
  std::set<std::string> given_;
};

}  // namespace cudal1::policy

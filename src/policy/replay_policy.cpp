#include "policy/replay_policy.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <system_error>

#include "core/error.h"
#include "core/hash.h"
#include "tasks/cuda_l1.h"

namespace fs = std::filesystem;

namespace cudal1::policy {
namespace {

const char* const kSourceHint =
    "give a CUDA-L1 JSON-lines file, or a folder of ModelNew files laid out as DIR/<task id>.py "
    "or DIR/<task id>/*.py";

// Copies of one reference differ in line endings and trailing blanks (a file saved on Windows, an
// editor trimming lines) without being different programs.
std::string normalise_source(const std::string& s) {
  std::string out;
  std::size_t line_start = 0;
  auto end_line = [&] {
    while (out.size() > line_start && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    out += '\n';
    line_start = out.size();
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;  // the '\n' ends it
    if (s[i] == '\r' || s[i] == '\n') end_line();
    else out += s[i];
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

// The parser gives a block's lines back each ending in "\n"; a kernel already in that form comes
// back byte for byte.
std::string with_final_newline(std::string code) {
  if (code.empty() || code.back() != '\n') code += '\n';
  return code;
}

// The longest run of backticks opening a line (after indentation): 3 or more is a line the parser
// would take for a fence.
std::size_t line_start_backticks(const std::string& code) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < code.size();) {
    std::size_t j = i;
    while (j < code.size() && (code[j] == ' ' || code[j] == '\t')) ++j;
    std::size_t k = j;
    while (k < code.size() && code[k] == '`') ++k;
    longest = std::max(longest, k - j);
    std::size_t nl = code.find('\n', k);
    i = nl == std::string::npos ? code.size() : nl + 1;
  }
  return longest;
}

PolicyAnswer replay_answer(const ReplayPolicy::Kernel& k) {
  PolicyAnswer a;
  std::size_t run = line_start_backticks(k.code);
  // A fence longer than any backtick run opening a line of the code: parse_response closes a
  // block only at a fence at least as long, so the file comes back whole.
  std::string fence(std::max<std::size_t>(3, run + 1), '`');
  a.text = "## Performance Analysis\nReplayed from " + k.origin +
           ": a kernel from a fixed set, not written for this prompt.\n\n"
           "## Algorithm Design\nThat of the replayed kernel, unchanged.\n\n"
           "## Code Implementation\n" + fence + "python\n" + k.code + fence + "\n";
  a.finish_reason = "stop";
  a.label = k.label;
  return a;
}

// CUDA-L1's baseline variants are the task's Model made faster; the evaluator loads ModelNew.
std::string as_modelnew(const std::string& field, std::string code, bool* shimmed) {
  *shimmed = field != "custom_code" && code.find("class ModelNew") == std::string::npos &&
             code.find("class Model") != std::string::npos;
  if (*shimmed)
    code += "\n\n# Added by cudal1's replay policy: this variant defines Model, candidates define ModelNew.\n"
            "class ModelNew(Model):\n    pass\n";
  return code;
}

// "dir/" has an empty filename; its name is the folder's.
std::string display_name(const fs::path& p) {
  return (p.has_filename() ? p : p.parent_path()).filename().string();
}

}  // namespace

ReplayPolicy::ReplayPolicy(const fs::path& source) : source_(source) {
  std::error_code ec;
  if (!fs::exists(source, ec))
    throw Error(ErrorKind::input, "replay source " + source.string() + " does not exist", kSourceHint);
  std::string name = display_name(source);
  if (fs::is_directory(source, ec)) {
    folder_ = true;
    fs::directory_iterator probe(source, ec);
    if (ec) throw Error(ErrorKind::input, "cannot read the folder " + source.string() + ": " + ec.message(), kSourceHint);
    return;
  }
  for (const CudaL1Row& r : read_cuda_l1(source.string())) {
    if (r.error) {
      ++skipped_rows_;
      continue;
    }
    Row row{r.name, normalise_source(r.text("ref_code")), {}};
    for (const char* field : {"custom_code", "cuda_graph_code", "cudnn_code"}) {
      std::string code = r.text(field);
      if (code.empty() || code == "None") continue;  // CUDA-L1 writes "None" for a task it has no kernel for
      bool shimmed = false;
      code = as_modelnew(field, with_final_newline(code), &shimmed);
      std::string where = r.name + " (line " + std::to_string(r.line) + "), field " + field;
      row.kernels.push_back({"line " + std::to_string(r.line) + ":" + field,
                             "replay:" + name + ":" + r.name + ":" + field,
                             name + ", row " + where + (shimmed ? ", run as ModelNew by subclassing its Model" : ""),
                             std::move(code)});
    }
    rows_.push_back(std::move(row));
  }
}

std::string ReplayPolicy::name() const { return "replay:" + display_name(source_); }

std::vector<ReplayPolicy::Kernel> ReplayPolicy::row_kernels(const PolicyRequest& request) const {
  std::vector<const Row*> match;
  for (const Row& r : rows_)
    if (r.name == request.task_id) match.push_back(&r);
  std::string reference = normalise_source(request.reference);
  if (match.empty() && !reference.empty())
    for (const Row& r : rows_)
      if (r.reference == reference) match.push_back(&r);
  std::vector<Kernel> out;
  for (const Row* r : match) out.insert(out.end(), r->kernels.begin(), r->kernels.end());
  return out;
}

std::vector<ReplayPolicy::Kernel> ReplayPolicy::folder_kernels(const std::string& task_id) const {
  fs::path id(task_id);
  if (task_id.empty() || id.is_absolute() || id.has_root_path()) return {};
  for (const fs::path& part : id)
    if (part == "..") return {};  // the task id names a file under the folder, never outside it
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::path single = source_ / (task_id + ".py"); fs::is_regular_file(single, ec)) files.push_back(single);
  if (fs::path dir = source_ / id; fs::is_directory(dir, ec)) {
    std::vector<fs::path> more;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file() && it->path().extension() == ".py") more.push_back(it->path());
    if (ec) throw Error(ErrorKind::input, "cannot read the folder " + dir.string() + ": " + ec.message(), kSourceHint);
    std::sort(more.begin(), more.end());
    files.insert(files.end(), more.begin(), more.end());
  }
  std::string name = display_name(source_);
  std::vector<Kernel> out;
  for (const fs::path& f : files) {
    std::string rel = f.lexically_relative(source_).generic_string();
    out.push_back({"file " + rel, "replay:" + name + ":" + rel, name + "/" + rel, with_final_newline(read_file(f))});
  }
  return out;
}

std::vector<PolicyAnswer> ReplayPolicy::answer(const PolicyRequest& request) {
  std::vector<Kernel> kernels = folder_ ? folder_kernels(request.task_id) : row_kernels(request);
  std::vector<PolicyAnswer> out;
  std::set<std::string> answered(request.answered_labels.begin(), request.answered_labels.end());
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Kernel& k : kernels) {
    if (static_cast<int>(out.size()) >= request.count) break;
    if (answered.count(k.label)) continue;
    if (given_.insert(k.key).second) out.push_back(replay_answer(k));
  }
  return out;
}

}  // namespace cudal1::policy

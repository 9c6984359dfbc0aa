#include "evaluator/attribution.h"

#include <algorithm>
#include <regex>
#include <string_view>
#include <vector>

#include "core/text.h"

namespace cudal1 {

std::vector<std::string> own_kernel_names(const std::string& source) {
  std::vector<std::string> names;
  static const std::regex bounds(R"(__launch_bounds__\s*\([^)]*\))");
  std::string src = std::regex_replace(source, bounds, " ");
  // The identifier right before the parameter list of a __global__ function, templates and
  // launch bounds included; and Triton's decorated functions.
  static const std::regex cuda(R"(__global__[^;{(]*?\b([A-Za-z_]\w*)\s*\()");
  static const std::regex triton(R"(@triton\.jit[^\n]*\n\s*def\s+([A-Za-z_]\w*))");
  for (const auto* re : {&cuda, &triton})
    for (std::sregex_iterator it(src.begin(), src.end(), *re), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (name != "void" && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  return names;
}

namespace {

bool contains_word(const std::string& text, const std::string& word) {
  for (std::size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool left = pos == 0 || !(std::isalnum(static_cast<unsigned char>(text[pos - 1])) || text[pos - 1] == '_');
    std::size_t end = pos + word.size();
    bool right = end >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
    if (left && right) return true;
  }
  return false;
}

const char* category(const std::string& name, const std::vector<std::string>& own) {
  for (auto& o : own)
    if (contains_word(name, o)) return "own";
  static const std::regex compiled(R"(^triton_|^triton__)");
  static const std::regex library(R"(cublas|cutlass|cudnn|cufft|cusparse|cutensor|nvjet|xmma|gemm|gemv|sm\d+_|magma|fmha|flash|cub::|thrust::|Kernel2|implicit_convolve|winograd|fft)",
                                  std::regex::icase);
  static const std::regex aten(R"(at::|at_cuda_detail|elementwise_kernel|reduce_kernel|vectorized_|unrolled_|index_elementwise|CatArrayBatched|softmax_warp|cunn_|batch_norm|layer_norm|GammaBeta|RowwiseMoments|cuComputePartGradGammaBeta)");
  if (std::regex_search(name, compiled)) return "compiled";
  if (std::regex_search(name, aten)) return "aten";
  if (std::regex_search(name, library)) return "library";
  return "other";
}

}  // namespace

Attribution attribute_kernels(const nlohmann::json& kernels, const std::vector<std::string>& own) {
  Attribution a;
  a.defined = own;
  a.top = nlohmann::json::array();
  for (auto& k : kernels) {
    std::string name = k.value("name", "");
    double us = k.value("us", 0.0);
    std::string cat = category(name, own);
    if (cat == "own") a.own_us += us;
    else if (cat == "compiled") a.compiled_us += us;
    else if (cat == "library") a.library_us += us;
    else if (cat == "aten") a.aten_us += us;
    else a.other_us += us;
    if (a.top.size() < 8) a.top.push_back({{"name", name.substr(0, 120)}, {"us", us}, {"category", cat}});
  }
  return a;
}

nlohmann::json Attribution::to_json() const {
  double t = total_us();
  auto share = [&](double us) { return t > 0 ? us / t : 0.0; };
  return {{"gpu_us", t},
          {"share", {{"own", share(own_us)}, {"compiled", share(compiled_us)}, {"library", share(library_us)},
                     {"aten", share(aten_us)}, {"other", share(other_us)}}},
          {"defined_kernels", defined}, {"top_kernels", top}};
}

namespace {

// A compiler's own error diagnostic ("main.cpp:4:59: error: ...", nvcc's "cuda.cu(181): error:
// ...", a bare "error: ..."), not a warning's quoted source line that merely holds "error:".
bool compiler_error_line(std::string_view line) {
  static const std::regex diagnostic(R"(^\s*(\S+:\d+:(\d+:)? (fatal )?error:|\S+\(\d+\): (catastrophic )?error:|(fatal )?error:))");
  return std::regex_search(line.begin(), line.end(), diagnostic);
}

// The line of a compiler's message worth showing: the first that says error, else its first line.
std::string_view error_line_of(std::string_view message) {
  for (std::string_view rest = message; !rest.empty();) {
    std::string_view l = first_line(rest);
    if (compiler_error_line(l)) return l;
    rest.remove_prefix(std::min(rest.size(), l.size() + 1));
  }
  return first_line(message);
}

// "swish_cuda: main.cpp:4:59: error: ... was not declared in this scope", or "" when no module
// of the build record failed. When several failed, the first one's error and the others' names
// ("; relu_cuda and 1 more also failed"): a reader who fixes the first should know it is not the
// last. A call the build service did not foresee compiled in the candidate's process, which
// reports its failure itself (calls_reported.in_process_failed): cut here again, as the process
// is the candidate's.
std::string build_failure_in_brief(const nlohmann::json& build) {
  if (!build.is_object()) return "";
  const nlohmann::json calls = build.value("calls_reported", nlohmann::json::object());
  const nlohmann::json in_process = calls.is_object() ? calls.value("in_process_failed", nlohmann::json::array()) : nlohmann::json();
  if (in_process.is_array() && !in_process.empty() && in_process[0].is_string())
    return "in the candidate's process: " + std::string(utf8_prefix(first_line(in_process[0].get_ref<const std::string&>()), 240));
  if (build.value("kind", "") != "compile_error") return "";
  std::string first;
  std::vector<std::string> others;
  for (const auto& m : build.value("modules", nlohmann::json::array())) {
    const std::string message = m.is_object() ? m.value("error", "") : "";
    if (message.empty()) continue;
    const std::string name = m.value("name", "");
    if (first.empty())
      first = (name.empty() ? "" : name + ": ") + std::string(utf8_prefix(error_line_of(message), 240));
    else
      others.push_back(name.empty() ? "an unnamed module" : name);
  }
  if (others.size() == 1) first += "; " + others[0] + " also failed";
  if (others.size() > 1) first += "; " + others[0] + " and " + std::to_string(others.size() - 1) + " more also failed";
  return first;
}

}  // namespace

std::string decoy_evidence(const Attribution& a, const nlohmann::json& build) {
  std::string evidence = "the candidate defines kernels (" + (a.defined.empty() ? std::string() : a.defined.front()) +
                         (a.defined.size() > 1 ? ", ..." : "") + ") but none ran in " + std::to_string(int(a.total_us())) +
                         " us of GPU work: PyTorch's or library kernels did the work";
  if (std::string error = build_failure_in_brief(build); !error.empty())
    evidence += "; its extension did not build (" + error + "), so what ran is the candidate's fallback";
  return evidence;
}

}  // namespace cudal1

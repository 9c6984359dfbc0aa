#include "policy/rewrite_reference.h"

#include <regex>
#include <sstream>

namespace cudal1::policy {

namespace {

// The source with '#' comments cut off each line (a '#' inside a one-line string is kept), so
// that a comment naming Conv2d does not make a task look like a convolution.
std::string without_comments(const std::string& source) {
  std::string out;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '\n') {
      quote = 0;
      comment = false;
    } else if (comment) {
      continue;
    } else if (quote) {
      if (c == '\\' && i + 1 < source.size() && source[i + 1] != '\n') out += source[i++];
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      comment = true;
      continue;
    }
    out += c;
  }
  return out;
}

// The bodies of every `def forward` (the lines indented deeper than the def), joined.
std::string forward_bodies(const std::string& source) {
  static const std::regex def_forward(R"(^([ \t]*)def[ \t]+forward\b)");
  std::istringstream in(source);
  std::string line, bodies;
  std::size_t def_indent = 0;
  bool inside = false;
  while (std::getline(in, line)) {
    std::size_t indent = line.find_first_not_of(" \t");
    bool blank = indent == std::string::npos;
    if (inside && !blank && indent <= def_indent) inside = false;
    std::smatch m;
    if (!inside && std::regex_search(line, m, def_forward)) {
      inside = true;
      def_indent = m.length(1);
      continue;
    }
    if (inside) bodies += line + "\n";
  }
  return bodies;
}

}  // namespace

std::string normalized_reference(const std::string& source) {
  const std::string bom = "\xEF\xBB\xBF";
  std::string out;
  for (std::size_t i = source.rfind(bom, 0) == 0 ? bom.size() : 0; i < source.size(); ++i)
    if (!(source[i] == '\r' && i + 1 < source.size() && source[i + 1] == '\n')) out += source[i];
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

ReferenceTraits reference_traits(const std::string& reference) {
  static const std::regex conv(R"(\b(?:Lazy)?Conv(?:Transpose)?([123])d\b|\bconv(?:_transpose)?([123])d\b)");
  static const std::regex host_sync(R"(\.(?:item|cpu|tolist|numpy)\s*\(\s*\))");
  std::string code = without_comments(normalized_reference(reference));
  ReferenceTraits t;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), conv); it != std::sregex_iterator(); ++it) {
    char dims = (*it)[1].matched ? (*it)[1].str()[0] : (*it)[2].str()[0];
    t.conv = true;
    t.conv2d |= dims == '2';
    t.conv3d |= dims == '3';
  }
  t.host_sync = std::regex_search(forward_bodies(code), host_sync);
  return t;
}

Combination applicable_rewrites(const std::string& reference) {
  ReferenceTraits t = reference_traits(reference);
  Combination c = Combination{}.with(Rewrite::compile).with(Rewrite::compile_reduce_overhead);
  if (!t.host_sync) c = c.with(Rewrite::graph);
  if (t.conv2d && !t.conv3d) c = c.with(Rewrite::channels_last);
  if (t.conv) c = c.with(Rewrite::cudnn_benchmark);
  return c.with(Rewrite::torchscript);
}

Combination applicable_rewrites(const std::string& reference, const std::string& device) {
  Combination c = applicable_rewrites(reference);
  if (device == "cpu" || device.rfind("cpu:", 0) == 0) {
    Combination cuda_only = Combination{}.with(Rewrite::graph).with(Rewrite::cudnn_benchmark).with(Rewrite::compile_reduce_overhead);
    c.bits &= ~cuda_only.bits;
  }
  return c;
}

}  // namespace cudal1::policy

// build/ninja_file.h — the build.ninja torch writes for a load_inline extension, read back.
//
// The build service runs torch's own commands itself (each one sandboxed, bounded and timed)
// instead of running ninja, so it reads the file: top-level variables (cxx, nvcc, cflags,
// post_cflags, cuda_cflags, cuda_post_cflags, ldflags), rules (compile, cuda_compile, link) and
// build edges. Only the subset of ninja's syntax torch writes is accepted.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cudal1 {

struct NinjaFile {
  struct Edge {
    std::string out, rule;
    std::vector<std::string> in;
  };
  std::map<std::string, std::string> vars;   // top-level `name = value`
  std::map<std::string, std::string> rules;  // rule name -> its command
  std::vector<Edge> edges;                   // in file order

  const std::string& var(const std::string& name) const;  // "" when absent
  // The shell command of `rule` with $in and $out given and every other variable expanded,
  // as ninja would run it through `sh -c`.
  std::string command(const std::string& rule, const std::vector<std::string>& in,
                      const std::string& out) const;
  // The first build edge of `rule`, or nullptr.
  const Edge* edge_with_rule(const std::string& rule) const;
};

// Throws Error(internal) naming the line it does not understand.
NinjaFile parse_ninja(const std::string& text);

}  // namespace cudal1

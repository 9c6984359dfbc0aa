#include "build/clang.h"

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "build/shell.h"
#include "core/error.h"
#include "core/paths.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::optional<ClangHost> probe(const std::string& path) {
  std::string out = sh_output(shell_quote(path) + " --version 2>/dev/null | head -1", 30);
  std::smatch m;
  static const std::regex version(R"(clang version (\d+)\.)");
  if (!std::regex_search(out, m, version)) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return ClangHost{path, out, std::stoi(m[1])};
}

constexpr int kOldestClang = 11;  // -fpch-instantiate-templates

}  // namespace

std::optional<ClangHost> find_clang(const std::string& configured) {
  std::string want = configured;
  if (want.empty())
    if (const char* env = std::getenv("CUDAL1_CLANG")) want = env;
  if (want == "off") return std::nullopt;
  if (!want.empty()) {
    auto c = probe(want);
    if (!c)
      throw Error(ErrorKind::input, "the clang given for the fast path (" + want + ") does not run or is not clang",
                  "name a clang++ (CUDAL1_CLANG or --clang), or say off to compile with g++ only");
    if (c->major < kOldestClang)
      throw Error(ErrorKind::input, "the clang given for the fast path (" + want + ") is version " + std::to_string(c->major),
                  "use clang " + std::to_string(kOldestClang) + " or newer, or say off to compile with g++ only");
    return c;
  }
  std::vector<std::string> names = {"clang++"};
  for (int v = 30; v >= kOldestClang; --v) names.push_back("clang++-" + std::to_string(v));
  for (auto& n : names) {
    std::string p = find_on_path(n);
    if (p.empty()) continue;
    if (auto c = probe(p); c && c->major >= kOldestClang) return c;
  }
  return std::nullopt;
}

ClangFlags clang_flags(const std::vector<std::string>& gxx) {
  ClangFlags out;
  // Options whose value is the next word when not joined.
  static const std::vector<std::string> with_value = {"-D", "-U", "-I", "-isystem", "-iquote", "-idirafter", "-include"};
  static const std::regex same_meaning(
      R"(-[DUI].+|-isystem.+|-iquote.+|-idirafter.+|-std=(c|gnu)\+\+\w+|-O[0-3sgz]?|-Ofast|-f(no-)?(PIC|pic|PIE|pie)|)"
      R"(-g[0-3]?|-ggdb[0-3]?|-w|-W(?![lap],).+|-pthread|-f(no-)?(strict-aliasing|fast-math|math-errno|unroll-loops|exceptions|rtti|)"
      R"(finite-math-only|omit-frame-pointer|signed-char|unsigned-char|visibility-inlines-hidden|stack-protector|)"
      R"(stack-protector-strong|diagnostics-color)|-fvisibility=(hidden|default)|-fdiagnostics-color=\w+|)"
      R"(-m(arch|tune)=[\w.-]+|-m(no-)?(avx|avx2|avx512\w*|fma|f16c|sse\w*|bmi2?|popcnt|lzcnt)|-m64)");
  for (std::size_t i = 0; i < gxx.size(); ++i) {
    const std::string& w = gxx[i];
    if (w == "-x" && i + 1 < gxx.size() && gxx[i + 1] == "c++") {
      ++i;  // the TU is a .cpp file
      continue;
    }
    bool takes_next = false;
    for (auto& o : with_value) takes_next = takes_next || w == o;
    if (takes_next) {
      if (i + 1 >= gxx.size()) return out.reason = "option " + w + " has no value", out;
      out.words.push_back(w);
      out.words.push_back(gxx[++i]);
      continue;
    }
    if (starts_with(w, "-fopenmp") || w == "-openmp")
      return out.reason = "OpenMP (" + w + "): clang's runtime is not g++'s libgomp", out;
    if (!std::regex_match(w, same_meaning))
      return out.reason = "option " + w + ": its meaning under clang is not known to the build service", out;
    out.words.push_back(w);
  }
  out.ok = true;
  return out;
}

bool clang_may_replace(const std::string& compiler) {
  static const std::regex gcc_family(R"((x86_64-linux-gnu-)?(g\+\+|gcc|c\+\+|cc)(-\d+(\.\d+)*)?)");
  return std::regex_match(fs::path(compiler).filename().string(), gcc_family);
}

std::vector<std::string> clang_compile_words(const ClangHost& clang, const std::string& pch, const ClangFlags& flags,
                                             const std::string& stem) {
  std::vector<std::string> w = {clang.path};
  if (!pch.empty()) w.insert(w.end(), {"-include-pch", pch});
  w.insert(w.end(), {"-MMD", "-MF", stem + ".o.d"});
  w.insert(w.end(), flags.words.begin(), flags.words.end());
  w.insert(w.end(), {"-c", stem + ".cpp", "-o", stem + ".o"});
  return w;
}

std::string undefined_symbol_check(const std::string& torch_link_command) {
  return "{ " + torch_link_command +
         " -Wl,-z,defs -Wl,--no-demangle 2>&1; } | grep -o \"undefined reference to \\`[^']*'\" | "
         "sed -e \"s/^undefined reference to \\`//\" -e \"s/'$//\" | grep -v -E '^_?Py' | sort -u > symbols.missing; "
         "rm -f symcheck.so; cat symbols.missing; test ! -s symbols.missing";
}

}  // namespace cudal1

#include "build/host_flags.h"

#include <set>
#include <string_view>

namespace cudal1 {

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Options that change device code only, with whether they take a separate value.
struct DeviceOption {
  const char* name;
  bool value;
};
constexpr DeviceOption kDeviceOnly[] = {
    {"-gencode", true}, {"--generate-code", true}, {"-arch", true}, {"--gpu-architecture", true},
    {"-code", true}, {"--gpu-code", true}, {"-Xptxas", true}, {"--ptxas-options", true},
    {"-maxrregcount", true}, {"--maxrregcount", true}, {"-Xcudafe", true}, {"-Xfatbin", true},
    {"--fatbin-options", true}, {"-t", true}, {"--threads", true}, {"-ftz", true}, {"--ftz", true},
    {"-prec-div", true}, {"--prec-div", true}, {"-prec-sqrt", true}, {"--prec-sqrt", true},
    {"-fmad", true}, {"--fmad", true}, {"-diag-suppress", true}, {"--diag-suppress", true},
    {"--expt-relaxed-constexpr", false}, {"-expt-relaxed-constexpr", false},
    {"--expt-extended-lambda", false}, {"-expt-extended-lambda", false}, {"--extended-lambda", false},
    {"-extended-lambda", false}, {"--use_fast_math", false}, {"-use_fast_math", false},
    {"--use-fast-math", false}, {"-lineinfo", false}, {"--generate-line-info", false}, {"-G", false},
    {"--device-debug", false}, {"--restrict", false}, {"-restrict", false}, {"-res-usage", false},
    {"--resource-usage", false}, {"--keep", false}, {"-keep", false}, {"-v", false}, {"--verbose", false},
    {"-Wno-deprecated-gpu-targets", false}, {"--Wno-deprecated-gpu-targets", false},
    {"--allow-unsupported-compiler", false}, {"-allow-unsupported-compiler", false},
    {"--extra-device-vectorization", false}, {"-extra-device-vectorization", false},
    {"--source-in-ptx", false}, {"-src-in-ptx", false}, {"--display-error-number", false},
    {"--keep-device-functions", false}, {"-keep-device-functions", false}, {"-dopt", true}, {"--dopt", true},
};

// Options with a value that g++ takes as they are.
constexpr const char* kHostValued[] = {"-D", "-U", "-I", "-isystem", "-include"};

void add_compiler_options(std::string_view value, std::vector<std::string>& out) {
  // nvcc splits an -Xcompiler value at commas.
  std::size_t start = 0;
  for (std::size_t i = 0; i <= value.size(); ++i)
    if (i == value.size() || value[i] == ',') {
      if (i > start) out.emplace_back(value.substr(start, i - start));
      start = i + 1;
    }
}

}  // namespace

HostFlags host_flags_from_nvcc(const std::vector<std::string>& in) {
  HostFlags r;
  auto refuse = [&](const std::string& opt) {
    r.reason = "nvcc option " + opt + ": its effect on host code is not known to the splitter";
    return r;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::string& w = in[i];
    auto next = [&]() -> const std::string* { return i + 1 < in.size() ? &in[++i] : nullptr; };
    bool handled = false;
    for (auto& d : kDeviceOnly) {
      std::string_view name = d.name;
      if (w == name) {
        if (d.value && !next()) return refuse(w);
        handled = true;
      } else if (starts(w, std::string(name) + "=")) {
        handled = true;
      }
      if (handled) break;
    }
    if (handled) continue;
    for (const char* opt : kHostValued) {
      std::string_view o = opt;
      if (w == o) {
        const std::string* v = next();
        if (!v) return refuse(w);
        r.words.push_back(w);
        r.words.push_back(*v);
        handled = true;
      } else if (starts(w, o) && (o.size() == 2)) {
        r.words.push_back(w);
        handled = true;
      }
      if (handled) break;
    }
    if (handled) continue;
    if (w == "-Xcompiler" || w == "--compiler-options") {
      const std::string* v = next();
      if (!v) return refuse(w);
      add_compiler_options(*v, r.words);
    } else if (starts(w, "-Xcompiler=") || starts(w, "--compiler-options=")) {
      add_compiler_options(std::string_view(w).substr(w.find('=') + 1), r.words);
    } else if (starts(w, "-std=") || starts(w, "--std=")) {
      r.words.push_back("-std=" + w.substr(w.find('=') + 1));
    } else if (w == "-std" || w == "--std") {
      const std::string* v = next();
      if (!v) return refuse(w);
      r.words.push_back("-std=" + *v);
    } else if (w.size() == 3 && starts(w, "-O")) {
      r.words.push_back(w);  // nvcc hands its -O level to the host compiler
    } else if (w == "-O" || w == "--optimize") {
      const std::string* v = next();
      if (!v) return refuse(w);
      r.words.push_back("-O" + *v);
    } else if (starts(w, "--optimize=")) {
      r.words.push_back("-O" + w.substr(11));
    } else if (w == "-g" || w == "--debug") {
      r.words.push_back("-g");
    } else if (w == "-w" || w == "--disable-warnings") {
      r.words.push_back("-w");
    } else if (w == "-ccbin" || w == "--compiler-bindir") {
      const std::string* v = next();
      if (!v) return refuse(w);
      r.host_compiler = *v;
    } else if (starts(w, "-ccbin=") || starts(w, "--compiler-bindir=")) {
      r.host_compiler = w.substr(w.find('=') + 1);
    } else if (w == "-m64") {
      r.words.push_back(w);
    } else {
      return refuse(w);
    }
  }
  r.ok = true;
  return r;
}

}  // namespace cudal1

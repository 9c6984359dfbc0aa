#include "build/split_classify.h"

#include <set>

namespace cudal1::split_detail {

namespace {

using std::size_t;
constexpr size_t npos = Scanner::npos;

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool torch_header(std::string_view h) {
  for (auto p : {"torch/", "ATen/", "c10/", "caffe2/", "pybind11/", "Python.h", "THC/"})
    if (starts(h, p)) return true;
  return false;
}

// Headers g++ cannot compile for the host (device intrinsics, device-only libraries).
bool device_header(std::string_view h) {
  for (auto p : {"cub/", "cuda/", "cute/", "cutlass/", "thrust/", "cooperative_groups", "mma.h",
                 "cuda_pipeline", "cuda_awbarrier", "curand_kernel", "sm_", "crt/"})
    if (starts(h, p)) return true;
  return false;
}

bool compiler_macro(std::string_view s) {
  return starts(s, "__CUDA_ARCH") || starts(s, "__CUDACC") || starts(s, "__NVCC") || s == "__CUDA_RUNTIME_H__";
}

const std::set<std::string_view> kDeviceKw = {"__global__", "__device__", "__shared__", "__constant__", "__managed__"};
const std::set<std::string_view> kParenAttr = {"__launch_bounds__", "__attribute__", "__cluster_dims__",
                                               "__maxnreg__", "__declspec", "alignas"};
const std::set<std::string_view> kKernelPrefix = {"static", "inline", "extern", "__forceinline__",
                                                  "__noinline__", "void"};
const std::set<std::string_view> kNotAName = {"int", "float", "double", "char", "bool", "long", "short",
                                              "unsigned", "signed", "void", "const", "volatile",
                                              "__restrict__", "__restrict", "restrict", "auto"};

struct Facts {
  bool torch = false, device_lib = false, launch = false, macro = false, inline_like = false,
       constexpr_ = false, class_like = false, function = false, pointer = false, const_ = false;
  std::set<std::string_view> kw;  // CUDA keywords present
};

}  // namespace

std::string Kernel::stub_declaration() const {
  std::string head = template_params.empty() ? "" : "template <" + template_params + "> ";
  return head + "void " + stub + "(dim3, dim3, size_t, cudaStream_t" + (params.empty() ? "" : ", " + params) + ");\n";
}

std::string Kernel::stub_definition() const {
  std::string call, targs;
  for (auto& a : args) call += (call.empty() ? "" : ", ") + a;
  for (auto& n : template_names) targs += (targs.empty() ? "" : ", ") + n;
  std::string head = template_params.empty() ? "" : "template <" + template_params + "> ";
  std::string out = head + "void " + stub +
                    "(dim3 __cudal1_grid, dim3 __cudal1_block, size_t __cudal1_smem, cudaStream_t __cudal1_stream" +
                    (params.empty() ? "" : ", " + params) + ") { " + name + (targs.empty() ? "" : "<" + targs + ">") +
                    "<<<__cudal1_grid, __cudal1_block, __cudal1_smem, __cudal1_stream>>>(" + call + "); }\n";
  // Explicit instantiations for the template arguments host code launches with: the host TU
  // only declares the stub template.
  for (auto& inst : instantiations) {
    std::string list, sig = "dim3, dim3, size_t, cudaStream_t";
    for (auto& a : inst) list += (list.empty() ? "" : ", ") + a;
    for (auto& param : param_tokens) {
      sig += ",";
      for (auto& tok : param) {
        std::size_t i = 0;
        while (i < template_names.size() && template_names[i] != tok) ++i;
        sig += " " + (i < template_names.size() ? inst[i] : tok);
      }
    }
    out += "template void " + stub + "<" + list + ">(" + sig + ");\n";
  }
  return out;
}

namespace {

class Classifier {
 public:
  Classifier(std::string_view src, const std::vector<Token>& t, const Scanner& scan) : src_(src), t_(t), scan_(scan) {}

  Classified run(const std::vector<Item>& items) {
    leading_includes(items);
    walk(items, false);
    for (auto& k : out_.kernels)
      if (!defined_.count(k.name)) refuse(0, "kernel " + k.name + " is declared but not defined in cuda.cu");
    for (auto& [b, e] : host_only_) host_code(b, e);
    for (auto& n : host_funcs_)
      if (device_funcs_.count(n)) refuse(0, "a host and a device function share the name " + n);
    return std::move(out_);
  }

 private:
  void refuse(size_t tok, const std::string& why) {
    if (out_.reason.empty())
      out_.reason = (tok < t_.size() && tok > 0 ? "line " + std::to_string(t_[tok].line) + ": " : std::string()) + why;
  }
  std::string name(size_t i) const { return std::string(t_[i].text); }

  Facts facts(size_t b, size_t e) const {
    Facts f;
    for (size_t j = b; j < e; ++j) {
      const Token& k = t_[j];
      // A namespace name counts before "::" and in `using namespace N;` / `namespace A = N;`.
      bool scoped = (j + 1 < e && t_[j + 1].is("::")) || (j > b && t_[j - 1].is("namespace")) ||
                    (j >= b + 3 && t_[j - 1].is("=") && t_[j - 3].is("namespace"));
      if (k.kind == TokKind::ident) {
        if (kDeviceKw.count(k.text) || k.is("__host__")) f.kw.insert(k.text);
        if (scoped && (k.is("torch") || k.is("at") || k.is("c10") || k.is("caffe2") || k.is("pybind11") || k.is("py")))
          f.torch = true;
        if (k.is("Tensor") || starts(k.text, "PackedTensorAccessor") || k.is("IntArrayRef") ||
            k.is("TensorOptions") || k.is("ScalarType") || starts(k.text, "TORCH_") || starts(k.text, "AT_") ||
            starts(k.text, "C10_"))
          f.torch = true;
        if (k.is("cub") || k.is("cooperative_groups") || k.is("nvcuda") || k.is("wmma") || k.is("cute") ||
            k.is("cutlass") || k.is("thrust") || (scoped && k.is("cuda")))
          f.device_lib = true;
        if (compiler_macro(k.text)) f.macro = true;
        if (k.is("inline") || k.is("__forceinline__") || k.is("static") || k.is("template")) f.inline_like = true;
        if (k.is("constexpr")) f.constexpr_ = f.inline_like = true;
        if (k.is("const")) f.const_ = true;
        if (k.is("struct") || k.is("class") || k.is("union") || k.is("enum") || k.is("typedef") || k.is("using") ||
            k.is("static_assert") || k.is("namespace"))
          f.class_like = true;
      } else if (k.is("<<<")) {
        f.launch = true;
      } else if (k.is("*")) {
        f.pointer = true;
      } else if (k.kind == TokKind::directive && k.text.find("<<<") != std::string_view::npos) {
        f.launch = true;
      }
    }
    return f;
  }

  // End of the declaration's header: its '{' or '=' at depth 0 (after any template<...>).
  size_t header_end(size_t b, size_t e) const {
    size_t j = b;
    while (j + 1 < e && t_[j].is("template") && t_[j + 1].is("<")) j = scan_.skip_angles(j + 1);
    for (; j < e; ++j) {
      if (t_[j].is("(") || t_[j].is("[")) j = scan_.match(j);
      else if (t_[j].is("{") || (t_[j].is("=") && !t_[j - 1].is("operator"))) return j;
    }
    return e;
  }

  void leading_includes(const std::vector<Item>& items) {
    std::string first;
    for (auto& it : items) {
      if (it.kind != Item::Kind::directive) break;
      std::string h = include_of(t_[it.b].text);
      if (h.empty()) break;
      if (first.empty()) first = h;
      if (h == "torch/extension.h") out_.pch_header = h;
    }
    if (out_.pch_header.empty() && first == "torch/types.h") out_.pch_header = first;
  }

  static std::string include_of(std::string_view d) {
    size_t i = d.find_first_not_of("# \t");
    if (i == std::string_view::npos || d.substr(i, 7) != "include") return "";
    size_t open = d.find_first_of("<\"", i + 7);
    if (open == std::string_view::npos) return "";
    size_t close = d.find(d[open] == '<' ? '>' : '"', open + 1);
    return close == std::string_view::npos ? "" : std::string(d.substr(open + 1, close - open - 1));
  }

  void walk(const std::vector<Item>& items, bool anonymous) {
    for (auto& it : items) {
      if (it.kind == Item::Kind::block) walk(it.children, anonymous || it.anonymous);
      else if (it.kind == Item::Kind::directive) directive(it);
      else decl(it, anonymous);
    }
  }

  void directive(const Item& it) {
    std::string_view d = t_[it.b].text;
    Placement& p = out_.placement[it.b];
    p.host = Placement::Host::full;
    p.device = true;
    size_t w = d.find_first_not_of("# \t");
    std::string_view word = w == std::string_view::npos ? "" : d.substr(w, d.find_first_of(" \t(<\"", w) - w);
    if (word == "include") {
      std::string h = include_of(d);
      if (h.empty()) return refuse(it.b, "a computed #include");
      if (torch_header(h)) {
        p.device = false;
        if (!starts(h, "pybind11") && h != "Python.h") out_.torch_included = true;
      } else if (device_header(h)) {
        p.host = Placement::Host::none;
      }
    } else if (word == "define" || word == "undef") {
      for (auto kw : {"<<<", "__global__", "__device__", "__shared__", "__constant__", "threadIdx", "blockIdx", "__syncthreads"})
        if (d.find(kw) != std::string_view::npos) return refuse(it.b, "CUDA code inside a macro");
    } else if (word == "if" || word == "ifdef" || word == "ifndef" || word == "elif") {
      for (auto m : {"__CUDA_ARCH", "__CUDACC", "__NVCC"})
        if (d.find(m) != std::string_view::npos) return refuse(it.b, "a preprocessor condition on the CUDA compiler");
    }
  }

  void decl(const Item& it, bool anonymous) {
    size_t he = header_end(it.b, it.e);
    Facts all = facts(it.b, it.e), head = facts(it.b, he);
    Placement& p = out_.placement[it.b];
    bool body = he < it.e && t_[he].is("{");
    head.function = false;
    for (size_t j = it.b; j < he; ++j)
      if (t_[j].is("(")) head.function = !head.class_like;
    if (head.kw.count("__global__")) return kernel(it, he, anonymous, all, p);
    if (all.kw.count("__global__")) return refuse(it.b, "a kernel declared inside another declaration");
    bool device = head.kw.count("__device__") || head.kw.count("__constant__") || head.kw.count("__shared__") ||
                  head.kw.count("__managed__");
    if (device) {
      if (all.torch) return refuse(it.b, "torch types in device code");
      if (all.launch) return refuse(it.b, "a kernel launched from device code");
      p.device = out_.has_device_code = true;
      std::string fn = function_name(it.b, he);
      if (head.kw.count("__host__")) {
        // nvcc compiles a non-inline host-device function once, in the device TU; host code
        // calls that copy through a declaration, as it called the one in cuda.cu.
        bool member = fn.empty() || qualified_;
        p.host = !body || head.inline_like ? Placement::Host::full
                 : member                  ? Placement::Host::none
                                           : Placement::Host::declaration;
        p.header_end = he;
        if (!fn.empty()) host_funcs_.insert(fn), device_funcs_.insert(fn);
      } else if (head.function && !fn.empty()) {
        device_funcs_.insert(fn);
      } else {
        for (size_t j = it.b; j < he; ++j)
          if (t_[j].kind == TokKind::ident && j + 1 <= he &&
              (j + 1 == he || t_[j + 1].is("[") || t_[j + 1].is(";") || t_[j + 1].is(",") || t_[j + 1].is("=")))
            device_vars_.insert(name(j));
      }
      return;
    }
    bool shared = !all.torch && (head.class_like || (head.function ? head.constexpr_ : (head.constexpr_ || (head.const_ && !head.pointer))));
    if (all.torch || !shared || all.launch) {
      p.host = Placement::Host::full;
      host_only_.emplace_back(it.b, it.e);
      if (head.function) {
        std::string fn = function_name(it.b, he);
        if (!fn.empty()) host_funcs_.insert(fn);
      }
      if (!(t_[it.b].is(";"))) out_.has_host_code = true;
      return;
    }
    p.device = true;
    p.host = all.device_lib ? Placement::Host::none : Placement::Host::full;
    if (p.host == Placement::Host::full && all.macro) refuse(it.b, "CUDA compiler macros in code shared with the host");
  }

  // The declared function's name (the identifier before its parameter list), or "".
  std::string function_name(size_t b, size_t he) {
    qualified_ = false;
    for (size_t j = b; j < he; ++j) {
      if (t_[j].kind == TokKind::ident && kParenAttr.count(t_[j].text) && j + 1 < he && t_[j + 1].is("(")) {
        j = scan_.match(j + 1);
        continue;
      }
      if (t_[j].is("(")) {
        if (j == b || t_[j - 1].kind != TokKind::ident) return "";
        qualified_ = j >= 2 && t_[j - 2].is("::");
        paren_ = j;
        return name(j - 1);
      }
    }
    return "";
  }

  void kernel(const Item& it, size_t he, bool anonymous, const Facts& all, Placement& p) {
    Kernel k;
    size_t g = it.b;
    if (t_[it.b].is("template")) {
      size_t close = it.b + 1 < he ? scan_.skip_angles(it.b + 1) : npos;
      if (close == npos || !template_parameters(it.b + 2, close - 1, k)) return refuse(it.b, "a template kernel the splitter cannot instantiate");
      g = close;
    }
    while (g < he && !t_[g].is("__global__")) {
      const Token& k = t_[g];
      if (k.kind == TokKind::ident && kParenAttr.count(k.text) && g + 1 < he && t_[g + 1].is("(")) g = scan_.match(g + 1) + 1;
      else if (k.is("[") && g + 1 < he && t_[g + 1].is("[")) g = scan_.match(g) + 1;
      else if ((k.kind == TokKind::ident && kKernelPrefix.count(k.text)) || k.kind == TokKind::literal) ++g;
      else return refuse(it.b, "a kernel declaration the splitter is not sure of");
    }
    std::string fn = function_name(g, he);
    if (fn.empty()) return refuse(it.b, "a kernel declaration the splitter is not sure of");
    if (qualified_) return refuse(it.b, "a kernel defined outside its namespace (" + fn + ")");
    if (anonymous) return refuse(it.b, "a kernel inside an anonymous namespace (" + fn + ")");
    if (all.torch) return refuse(it.b, "torch types in device code (kernel " + fn + ")");
    if (all.launch) return refuse(it.b, "a kernel launched from device code (" + fn + ")");
    size_t open = paren_, close = scan_.match(open);
    k.name = fn;
    k.stub = "__cudal1_launch_" + std::to_string(out_.kernels.size()) + "_" + fn;
    if (!parameters(open + 1, close, k)) return refuse(it.b, "a parameter of kernel " + fn + " the splitter cannot pass on");
    bool body = he < it.e && t_[he].is("{");
    p.device = out_.has_device_code = true;
    auto seen = kernel_index_.find(fn);
    if (seen == kernel_index_.end()) {
      kernel_index_[fn] = static_cast<int>(out_.kernels.size());
      p.stub_declaration = static_cast<int>(out_.kernels.size());
      out_.kernels.push_back(k);
    } else if (out_.kernels[seen->second].params != k.params || out_.kernels[seen->second].template_params != k.template_params ||
               (body && defined_.count(fn))) {
      return refuse(it.b, "two declarations of kernel " + fn + " that differ (overloads?)");
    }
    if (body) {
      defined_.insert(fn);
      p.stub_definition = kernel_index_[fn];
    }
  }

  bool parameters(size_t b, size_t e, Kernel& k) {
    auto parts = split_commas(t_, b, e, true);
    if (parts.size() == 1 && parts[0].second - parts[0].first == 1 && t_[parts[0].first].is("void")) return true;
    for (auto [pb, pe] : parts) {
      if (pe - pb < 2) return pb == pe && parts.size() == 1;
      for (size_t j = pb; j < pe; ++j)
        if (t_[j].is("=") || t_[j].is("[") || t_[j].is("(") || t_[j].is(".") || t_[j].kind == TokKind::directive) return false;
      const Token& last = t_[pe - 1];
      if (last.kind != TokKind::ident || kNotAName.count(last.text)) return false;
      std::string text;
      k.param_tokens.emplace_back();
      for (size_t j = pb; j < pe; ++j) {
        text += (text.empty() ? "" : " ") + std::string(t_[j].text);
        k.param_tokens.back().emplace_back(t_[j].text);
      }
      k.params += (k.params.empty() ? "" : ", ") + text;
      k.args.push_back(std::string(last.text));
    }
    return true;
  }

  // `typename T, int N = 4`: plain type and value parameters only (no packs, no templates).
  bool template_parameters(size_t b, size_t e, Kernel& k) {
    for (auto [pb, pe] : split_commas(t_, b, e, true)) {
      size_t end = pb;
      while (end < pe && !t_[end].is("=")) ++end;
      if (end - pb < 2 || t_[end - 1].kind != TokKind::ident) return false;
      for (size_t j = pb; j < pe; ++j)
        if (t_[j].is("...") || t_[j].is(".") || t_[j].is("template") || t_[j].is("<")) return false;
      k.template_names.emplace_back(t_[end - 1].text);
    }
    k.template_params = std::string(src_.substr(t_[b].begin, t_[e - 1].end - t_[b].begin));
    return !k.template_names.empty();
  }

  // Host code: launches become stub calls; nothing else may touch device symbols.
  void host_code(size_t b, size_t e) {
    std::set<size_t> callees;
    dispatch_.clear();
    for (size_t j = b; j + 1 < e; ++j)
      if (t_[j].is("AT_DISPATCH_FLOATING_TYPES") && t_[j + 1].is("(")) dispatch_.emplace_back(j + 1, scan_.match(j + 1));
    for (size_t j = b; j < e; ++j)
      if (t_[j].is("<<<")) launch(j, b, e, callees);
    for (size_t j = b; j < e; ++j) {
      const Token& k = t_[j];
      if (k.kind != TokKind::ident) continue;
      if (kDeviceKw.count(k.text)) return refuse(j, "device code inside host code");
      if (compiler_macro(k.text)) return refuse(j, "CUDA compiler macros in host code");
      if (kernel_index_.count(std::string(k.text)) && !callees.count(j))
        return refuse(j, "kernel " + name(j) + " used outside a launch");
      if (device_vars_.count(std::string(k.text))) return refuse(j, "device variable " + name(j) + " used by host code");
    }
  }

  // `k<<<cfg>>>(args)` or `k<targs><<<cfg>>>(args)` becomes `stub[<targs>](cfg, args)`.
  void launch(size_t l, size_t b, size_t e, std::set<size_t>& callees) {
    size_t callee = l - 1, targ_open = npos;
    if (l > b && t_[l - 1].is(">")) {  // explicit template arguments: find their "<"
      int depth = 0;
      for (size_t j = l - 1; j > b; --j) {
        if (t_[j].is(">")) ++depth;
        else if (t_[j].is("<") && --depth == 0) { targ_open = j; break; }
        else if (t_[j].is(";") || t_[j].is("{") || t_[j].is("}")) break;
      }
      if (targ_open == npos) return refuse(l, "a launch the splitter cannot read");
      callee = targ_open - 1;
    }
    if (l == b || t_[callee].kind != TokKind::ident) return refuse(l, "a launch through an expression");
    auto ki = kernel_index_.find(name(callee));
    if (ki == kernel_index_.end()) return refuse(l, "a launch of " + name(callee) + ", a kernel the splitter did not find");
    Kernel& k = out_.kernels[ki->second];
    if (k.template_names.empty() != (targ_open == npos))
      return refuse(l, "a launch of template kernel " + k.name + (targ_open == npos ? " with deduced template arguments" : " that is not a template"));
    if (targ_open != npos && !instantiation(targ_open + 1, l - 1, k)) return;
    size_t gt = l + 1;
    for (; gt < e && !t_[gt].is(">>>"); ++gt)
      if (t_[gt].is("(") || t_[gt].is("[") || t_[gt].is("{")) gt = scan_.match(gt);
    if (gt >= e || gt + 1 >= e || !t_[gt + 1].is("(")) return refuse(l, "a launch the splitter cannot read");
    size_t close = scan_.match(gt + 1);
    auto cfg = split_commas(t_, l + 1, gt, false);
    if (cfg.size() < 2 || cfg.size() > 4 || close == npos) return refuse(l, "a launch the splitter cannot read");
    auto slice = [&](size_t from, size_t to) { return std::string(src_.substr(t_[from].begin, t_[to - 1].end - t_[from].begin)); };
    std::string text = k.stub + (targ_open == npos ? "" : slice(targ_open, l)) + "(";
    for (size_t i = 0; i < cfg.size(); ++i) {
      if (cfg[i].first == cfg[i].second) return refuse(l, "a launch the splitter cannot read");
      text += (i ? ", " : "") + slice(cfg[i].first, cfg[i].second);
    }
    if (cfg.size() < 3) text += ", 0";
    if (cfg.size() < 4) text += ", (cudaStream_t)0";
    if (close > gt + 2) text += ", " + slice(gt + 2, close);
    out_.rewrites[t_[callee].begin] = {t_[close].end, text + ")"};
    callees.insert(callee);
    ++out_.launches;
  }

  // The template arguments [b, e) of a launch, as instantiations the device TU must provide:
  // scalar_t inside AT_DISPATCH_FLOATING_TYPES stands for double and for float (torch's cases).
  bool instantiation(size_t b, size_t e, Kernel& k) {
    auto parts = split_commas(t_, b, e, true);
    if (parts.size() != k.template_names.size()) {
      refuse(b, "a launch of template kernel " + k.name + " that leaves template arguments to defaults");
      return false;
    }
    bool dispatched = false;
    for (auto [d0, d1] : dispatch_)
      dispatched |= b > d0 && e < d1;
    std::vector<std::string> types = {""};
    Facts f = facts(b, e);
    if (f.torch) {
      refuse(b, "torch types as template arguments of kernel " + k.name);
      return false;
    }
    for (size_t j = b; j < e; ++j)
      if (t_[j].is("scalar_t")) {
        if (!dispatched) {
          refuse(b, "a launch of template kernel " + k.name + " with scalar_t outside AT_DISPATCH_FLOATING_TYPES");
          return false;
        }
        types = {"double", "float"};
      }
    for (auto& type : types) {
      std::vector<std::string> inst;
      for (auto [pb, pe] : parts) {
        std::string a;
        for (size_t j = pb; j < pe; ++j)
          a += (a.empty() ? "" : " ") + (t_[j].is("scalar_t") ? type : std::string(t_[j].text));
        inst.push_back(a);
      }
      k.instantiations.insert(inst);
    }
    return true;
  }

  std::string_view src_;
  const std::vector<Token>& t_;
  const Scanner& scan_;
  Classified out_;
  bool qualified_ = false;  // set by function_name: the name had a `::` before it
  size_t paren_ = 0;        // set by function_name: its parameter list's "("
  std::map<std::string, int> kernel_index_;
  std::set<std::string> defined_, device_vars_, device_funcs_, host_funcs_;
  std::vector<std::pair<size_t, size_t>> host_only_;
  std::vector<std::pair<size_t, size_t>> dispatch_;  // AT_DISPATCH_FLOATING_TYPES( ... ) in the item
};

}  // namespace

Classified classify(std::string_view src, const std::vector<Token>& t, const std::vector<Item>& items,
                    const Scanner& scan) {
  return Classifier(src, t, scan).run(items);
}

}  // namespace cudal1::split_detail

#include "build/split.h"

#include <map>
#include <set>

#include "build/split_classify.h"

namespace cudal1 {

using namespace split_detail;

namespace {

// What nvcc's torch headers bring into cuda.cu and g++'s do not (c10's Half.h and BFloat16.h
// include the CUDA types under __CUDACC__): host code written against them keeps them.
constexpr const char* kHostPrelude = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
// The standard and CUDA headers that torch's headers include under nvcc. The device TU drops
// torch, so it includes these itself: device code sees what it saw in cuda.cu.
constexpr const char* kDevicePrelude =
    "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstddef>\n"
    "#include <cstdint>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <cmath>\n"
    "#include <cfloat>\n#include <climits>\n#include <cassert>\n#include <limits>\n#include <algorithm>\n"
    "#include <type_traits>\n#include <utility>\n#include <array>\n#include <tuple>\n";

class Emitter {
 public:
  Emitter(std::string_view src, const std::vector<Token>& t, const Classified& c, const std::string& file)
      : src_(src), t_(t), c_(c), file_(file) {}

  void items(const std::vector<Item>& items) {
    for (auto& it : items) item(it);
  }
  std::string host, device;

 private:
  void line(std::string& out, std::size_t tok) {
    out += "\n#line " + std::to_string(t_[tok].line) + " \"" + file_ + "\"\n";
  }
  // The text of tokens [b, e), with the host rewrites applied when `for_host`.
  std::string text(std::size_t b, std::size_t e, bool for_host) {
    std::size_t from = t_[b].begin, to = t_[e - 1].end;
    std::string out;
    for (auto it = c_.rewrites.lower_bound(from); for_host && it != c_.rewrites.end() && it->first < to; ++it) {
      out.append(src_.substr(from, it->first - from));
      out += it->second.text;
      from = it->second.end;
    }
    out.append(src_.substr(from, to - from));
    return out;
  }
  void item(const Item& it) {
    if (it.kind == Item::Kind::block) {
      for (std::string* out : {&host, &device}) {
        line(*out, it.b);
        out->append(src_.substr(t_[it.b].begin, t_[it.open].end - t_[it.b].begin));
      }
      items(it.children);
      for (std::string* out : {&host, &device}) {
        line(*out, it.e - 1);
        *out += "}";
      }
      return;
    }
    const Placement& p = c_.placement.at(it.b);
    if (p.host == Placement::Host::full) {
      line(host, it.b);
      host += text(it.b, it.e, true);
    } else if (p.host == Placement::Host::declaration) {
      line(host, it.b);
      host += text(it.b, p.header_end, false) + ";";
    }
    if (p.device) {
      line(device, it.b);
      device += text(it.b, it.e, false);
    }
    if (p.stub_declaration >= 0) host += "\n" + c_.kernels[p.stub_declaration].stub_declaration();
    if (p.stub_definition >= 0) device += "\n" + c_.kernels[p.stub_definition].stub_definition();
  }

  std::string_view src_;
  const std::vector<Token>& t_;
  const Classified& c_;
  std::string file_;
};

}  // namespace

SplitResult split_cuda_source(std::string_view source, const std::string& file) {
  SplitResult r;
  Lexed lx = lex_cuda(source);
  if (!lx.problem.empty()) {
    r.reason = "the source could not be read with confidence (" + lx.problem + ")";
    return r;
  }
  Scanner scan(lx.tokens);
  std::vector<Item> items = scan.items(0, lx.tokens.size());
  if (!scan.problem().empty()) {
    r.reason = "the source could not be parsed with confidence (" + scan.problem() + ")";
    return r;
  }
  Classified c = classify(source, lx.tokens, items, scan);
  if (!c.reason.empty()) {
    r.reason = c.reason;
    return r;
  }
  Emitter em(source, lx.tokens, c, file);
  em.items(items);
  r.ok = true;
  r.pch_header = c.pch_header;
  if (c.has_host_code) {
    if (!c.pch_header.empty()) r.host_source = "#include <" + c.pch_header + ">\n";
    if (c.torch_included) r.host_source += kHostPrelude;
    r.host_source += em.host + "\n";
  }
  if (c.has_device_code) r.device_source = std::string(c.torch_included ? kDevicePrelude : "") + em.device + "\n";
  for (auto& k : c.kernels) {
    r.kernels.push_back(k.name);
    r.stubs.push_back(k.stub);
  }
  r.launches = c.launches;
  return r;
}

}  // namespace cudal1

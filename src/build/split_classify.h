// build/split_classify.h — which TU each item of a CUDA source goes to (internal to the splitter).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "build/split_items.h"

namespace cudal1::split_detail {

struct Kernel {
  std::string name, stub, params;  // params: the parameter list as tokens joined by spaces
  std::vector<std::string> args;   // parameter names, in order
  std::vector<std::vector<std::string>> param_tokens;
  // Template kernels: the parameter list of `template <...>`, its parameters' names, and every
  // set of template arguments host code launches it with (the device TU instantiates those).
  std::string template_params;
  std::vector<std::string> template_names;
  std::set<std::vector<std::string>> instantiations;

  std::string stub_declaration() const;
  std::string stub_definition() const;
};

struct Placement {
  enum class Host { none, full, declaration } host = Host::none;
  bool device = false;
  std::size_t header_end = 0;    // Host::declaration: the tokens before the function body
  int stub_declaration = -1;     // kernel whose stub is declared after this item (host TU)
  int stub_definition = -1;      // kernel whose stub is defined after this item (device TU)
};

struct Rewrite {
  std::size_t end;  // source offset the replaced text ends at
  std::string text;
};

struct Classified {
  std::string reason;                         // not empty: the source cannot be split safely
  std::map<std::size_t, Placement> placement;  // by the item's first token
  std::map<std::size_t, Rewrite> rewrites;     // launches in host code, by source offset
  std::vector<Kernel> kernels;
  std::string pch_header;
  bool torch_included = false, has_host_code = false, has_device_code = false;
  int launches = 0;
};

Classified classify(std::string_view src, const std::vector<Token>& t, const std::vector<Item>& items,
                    const Scanner& scan);

}  // namespace cudal1::split_detail

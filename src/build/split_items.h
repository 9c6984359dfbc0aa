// build/split_items.h — the top-level items of a CUDA source (internal to the splitter).
//
// An item is a preprocessor directive, a declaration (up to its ';' or the closing brace of a
// function body), or a namespace / extern "C" block holding items of its own. Item boundaries
// only decide which TU an item's text goes to; its text is always copied as written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "build/cuda_lex.h"

namespace cudal1::split_detail {

struct Item {
  enum class Kind { directive, decl, block } kind = Kind::decl;
  std::size_t b = 0, e = 0;  // token range [b, e)
  std::size_t open = 0;      // block: index of its '{' (the closing '}' is e - 1)
  bool anonymous = false;    // block: `namespace {`
  std::vector<Item> children;
};

class Scanner {
 public:
  explicit Scanner(const std::vector<Token>& t) : t_(t) {}
  // Items in [b, e); an empty `problem()` means every token was placed with confidence.
  std::vector<Item> items(std::size_t b, std::size_t e);
  // The index of the bracket closing the one at i ( "(" "[" "{" ), or npos.
  std::size_t match(std::size_t i) const;
  // Past a template parameter list whose "<" is at i, or npos.
  std::size_t skip_angles(std::size_t i) const;
  const std::string& problem() const { return problem_; }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  std::size_t decl_end(std::size_t i, std::size_t e);
  void fail(std::size_t i, const std::string& what);

  const std::vector<Token>& t_;
  std::string problem_;
};

// Top-level commas of the tokens in [b, e) (angle brackets counted when `angles`): the parts.
std::vector<std::pair<std::size_t, std::size_t>> split_commas(const std::vector<Token>& t, std::size_t b,
                                                              std::size_t e, bool angles);

}  // namespace cudal1::split_detail

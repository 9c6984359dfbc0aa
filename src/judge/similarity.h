// judge/similarity.h — how alike two candidates' code is, in a way renaming does not hide.
//
// The code is read as Python tokens: comments dropped, every string literal one token, every
// number one token, and every identifier that is not a Python keyword, a builtin, a well-known
// module name (torch, gc, threading, ...), a dunder name or an attribute name (what follows a
// `.`) one placeholder. So `self._memo[id(x)]` and `self._seen[id(inp)]` read alike, while
// `id`, `data_ptr`, `gc` and `_getframe`, the words hacks are made of, stay themselves.
// Shingles are runs of 5 such tokens; a MinHash signature (128 fixed hash seeds) of the set of
// shingles estimates the Jaccard similarity of two such sets. Deterministic across runs and builds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cudal1::judge {

// The normalised tokens of Python source (what the shingles are made of).
std::vector<std::string> normalised_tokens(const std::string& code);

class MinHash {
 public:
  static constexpr std::size_t kHashes = 128;
  static constexpr std::size_t kShingle = 5;

  explicit MinHash(const std::string& code);
  // The estimated Jaccard similarity of the two codes' shingle sets, in [0, 1].
  double similarity(const MinHash& other) const;

 private:
  std::vector<uint64_t> signature_;
};

}  // namespace cudal1::judge

// judge/similarity.h — how alike two candidates' code is, in a way renaming does not hide.
//
// The code is read as Python tokens: comments dropped, every string literal one token, every
// number one token, and every identifier that is not a Python keyword, a builtin, a well-known
// module name (torch, gc, threading, ...), a dunder name or an attribute name (what follows a
// `.`) one placeholder. So `self._memo[id(x)]` and `self._memo[id(inp)]` read alike, while
// `id`, `data_ptr`, `gc` and `_getframe`, the words hacks are made of, stay themselves.
// Shingles are runs of 5 such tokens. A MinHash signature (128 fixed hash seeds) of a set of
// shingles estimates the Jaccard similarity of two such sets. Deterministic across runs and builds.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace cudal1::judge {

// The normalised tokens of Python source (what the shingles are made of).
std::vector<std::string> normalised_tokens(const std::string& code);

using Shingles = std::unordered_set<uint64_t>;  // 64-bit hashes of 5-token runs

Shingles shingles(const std::string& code);

// The shingles of a candidate that its task's reference does not have: a candidate repeats its
// reference's signature and arithmetic, which says which task it is for, not which trick it plays.
Shingles distinctive_shingles(const std::string& code, const std::string& reference);

class MinHash {
 public:
  static constexpr std::size_t kHashes = 128;
  static constexpr std::size_t kShingle = 5;

  explicit MinHash(const Shingles& shingles);
  explicit MinHash(const std::string& code) : MinHash(shingles(code)) {}
  // The estimated Jaccard similarity of the two shingle sets, in [0, 1]; 0 when either is empty.
  double similarity(const MinHash& other) const;

 private:
  std::vector<uint64_t> signature_;
};

}  // namespace cudal1::judge

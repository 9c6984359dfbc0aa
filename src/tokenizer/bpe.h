// tokenizer/bpe.h — the byte-level BPE model of a tokenizer.json ("model": {"type": "BPE"}): the
// vocabulary, the ranked merges, and the merge loop that turns one pre-tokenized piece into ids.
//
// Pieces arrive as raw bytes. Each byte starts as the id of its byte-level character; then the
// adjacent pair with the lowest merge rank (leftmost on ties) is merged until none is left, which
// is HF's algorithm and order exactly. A priority queue over a linked list of symbols keeps that
// O(n log n) for long pieces, and a cache answers the pieces that repeat (most of them, in code).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cudal1::tokenizer {

class Bpe {
 public:
  // Reads tokenizer.json's "model". Merges may be "a b" strings or [a, b] pairs. Throws
  // cudal1::Error (input) naming the field: another model type, a merge naming a token outside
  // the vocabulary, options byte-level BPE does not use (dropout, byte_fallback, prefixes).
  static Bpe from_json(const nlohmann::json& model, const std::string& context);

  // Appends the ids of one piece (raw bytes). Thread-safe.
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // HF's spelling ("Ġthe")
  const std::string* id_to_token(int32_t id) const;                  // nullptr when unknown
  // The bytes a model token stands for (HF's ByteLevel decoder on one token); nullptr if unknown.
  const std::string* id_to_bytes(int32_t id) const;

  std::size_t size() const { return vocab_.size(); }
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  std::size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  struct Cache;

  void merge(std::string_view piece, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;       // HF spelling -> id
  std::unordered_map<std::string, int32_t> byte_vocab_;  // raw bytes -> id (for ignore_merges)
  std::vector<std::string> id_to_token_;
  std::vector<std::string> id_to_bytes_;
  std::vector<bool> has_id_;
  std::array<int32_t, 256> byte_ids_{};  // -1: the byte's character is not in the vocabulary
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  std::shared_ptr<Cache> cache_;
};

}  // namespace cudal1::tokenizer

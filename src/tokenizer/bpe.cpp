#include "tokenizer/bpe.h"

#include <algorithm>
#include <mutex>
#include <queue>
#include <shared_mutex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte_level.h"

namespace cudal1::tokenizer {

// Pieces seen before and their ids. Bounded: when full it starts over, which keeps memory flat
// on an endless training stream while the common pieces come straight back in.
struct Bpe::Cache {
  static constexpr std::size_t kCapacity = 1 << 16;
  static constexpr std::size_t kMaxPieceBytes = 256;  // long pieces are rare; not worth keeping
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> map;
};

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

Error model_error(const std::string& message, const std::string& context, const std::string& hint = {}) {
  return Error(ErrorKind::input, message,
               hint.empty() ? "supported: \"model\": {\"type\": \"BPE\", \"vocab\": {...}, \"merges\": [...]} of the "
                              "byte-level kind (Qwen2, Llama-3)"
                            : hint,
               context);
}

}  // namespace

Bpe Bpe::from_json(const nlohmann::json& m, const std::string& context) {
  if (!m.is_object()) throw model_error("\"model\" is missing or not an object", context);
  std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "BPE";
  if (type != "BPE") throw model_error("unsupported model.type \"" + type + "\" (only \"BPE\" is supported)", context);
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw model_error("model.vocab is missing or not an object", context);
  if (!m.contains("merges") || !m["merges"].is_array()) throw model_error("model.merges is missing or not a list", context);
  auto non_null = [&](const char* key) { return m.contains(key) && !m[key].is_null(); };
  if (non_null("dropout") && m["dropout"].get<double>() != 0.0)
    throw model_error("model.dropout is set; BPE dropout is a training-time augmentation and is not supported", context);
  if (non_null("continuing_subword_prefix") || non_null("end_of_word_suffix"))
    throw model_error("model.continuing_subword_prefix / end_of_word_suffix are set; byte-level BPE uses neither", context);
  if (non_null("byte_fallback") && m["byte_fallback"].get<bool>())
    throw model_error("model.byte_fallback is true (SentencePiece-style BPE); only byte-level BPE is supported", context);

  Bpe bpe;
  bpe.cache_ = std::make_shared<Cache>();
  bpe.ignore_merges_ = non_null("ignore_merges") && m["ignore_merges"].get<bool>();
  bpe.fuse_unk_ = non_null("fuse_unk") && m["fuse_unk"].get<bool>();

  int32_t max_id = -1;
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      throw model_error("model.vocab[\"" + it.key() + "\"] is not a non-negative integer id", context);
    auto id = static_cast<int32_t>(it.value().get<int64_t>());
    bpe.vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  bpe.id_to_token_.assign(static_cast<std::size_t>(max_id + 1), {});
  bpe.id_to_bytes_.assign(static_cast<std::size_t>(max_id + 1), {});
  bpe.has_id_.assign(static_cast<std::size_t>(max_id + 1), false);
  for (const auto& [token, id] : bpe.vocab_) {
    bpe.id_to_token_[id] = token;
    bpe.id_to_bytes_[id] = token_to_bytes(token);
    bpe.has_id_[id] = true;
    // Only tokens spelt wholly in the byte-level alphabet can come out of bytes.
    if (auto bytes = token_to_bytes_strict(token)) bpe.byte_vocab_.emplace(std::move(*bytes), id);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bpe.byte_vocab_.find(std::string(1, static_cast<char>(b)));
    bpe.byte_ids_[b] = it == bpe.byte_vocab_.end() ? -1 : it->second;
  }
  if (non_null("unk_token")) {
    std::string unk = m["unk_token"].get<std::string>();
    auto it = bpe.vocab_.find(unk);
    if (it == bpe.vocab_.end()) throw model_error("model.unk_token \"" + unk + "\" is not in model.vocab", context);
    bpe.unk_id_ = it->second;
  }

  const auto& merges = m["merges"];
  bpe.merges_.reserve(merges.size());
  auto lookup = [&](const std::string& token, std::size_t rank) {
    auto it = bpe.vocab_.find(token);
    if (it == bpe.vocab_.end())
      throw model_error("model.merges[" + std::to_string(rank) + "] names \"" + token + "\", which is not in model.vocab",
                        context, "every merge's two parts and their concatenation must be vocabulary tokens");
    return it->second;
  };
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& item = merges[rank];
    std::string a, b;
    if (item.is_string()) {
      // The older "a b" form. Byte-level tokens never hold a real space (it is "Ġ"), so one
      // space separates exactly two parts.
      const std::string& s = item.get_ref<const std::string&>();
      auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw model_error("model.merges[" + std::to_string(rank) + "] = \"" + s + "\" is not two tokens separated by one space",
                          context);
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
      a = item[0].get<std::string>();
      b = item[1].get<std::string>();
    } else {
      throw model_error("model.merges[" + std::to_string(rank) + "] is neither \"a b\" nor [\"a\", \"b\"]", context);
    }
    int32_t ia = lookup(a, rank), ib = lookup(b, rank), merged = lookup(a + b, rank);
    // HF collects merges into a map, so a repeated pair keeps its last rank.
    bpe.merges_.insert_or_assign(pair_key(ia, ib), Merge{static_cast<int32_t>(rank), merged});
  }
  return bpe;
}

std::optional<int32_t> Bpe::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* Bpe::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= has_id_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

const std::string* Bpe::id_to_bytes(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= has_id_.size() || !has_id_[id]) return nullptr;
  return &id_to_bytes_[id];
}

void Bpe::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    // Llama-3's rule: a piece that is itself a token is that token, whatever the merges say.
    auto it = byte_vocab_.find(std::string(piece));
    if (it != byte_vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  bool cacheable = piece.size() <= Cache::kMaxPieceBytes;
  std::string key;
  if (cacheable) {
    key.assign(piece);
    std::shared_lock lock(cache_->mutex);
    auto it = cache_->map.find(key);
    if (it != cache_->map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::size_t start = out.size();
  merge(piece, out);
  if (cacheable) {
    std::unique_lock lock(cache_->mutex);
    if (cache_->map.size() >= Cache::kCapacity) cache_->map.clear();
    cache_->map.emplace(std::move(key), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
  }
}

void Bpe::merge(std::string_view piece, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> syms;
  syms.reserve(piece.size());
  for (char ch : piece) {
    int32_t id = byte_ids_[static_cast<unsigned char>(ch)];
    if (id < 0) {
      // Byte-level vocabularies hold all 256 bytes; HF maps a missing one to unk, else drops it.
      if (!unk_id_) continue;
      if (fuse_unk_ && !syms.empty() && syms.back().id == *unk_id_) continue;
      id = *unk_id_;
    }
    auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1, true});
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  // Min-heap on (rank, position): HF's order, lowest rank first and leftmost among equals.
  struct Candidate {
    int32_t rank, pos, id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t pos) {
    int32_t next = syms[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pair_key(syms[pos].id, syms[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = syms[top.pos];
    // Stale entries: the left symbol was merged away, or its right neighbour changed.
    if (!left.alive || left.next < 0) continue;
    auto it = merges_.find(pair_key(left.id, syms[left.next].id));
    if (it == merges_.end() || it->second.id != top.id) continue;
    Symbol& right = syms[left.next];
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace cudal1::tokenizer

// core/keyed_mutex: one lock per key, made on first use and dropped when nobody holds or waits.
// Lanes that evaluate the same task at once would each compute the task's cached facts (lint,
// baselines) side by side; with the key locked, the second waits and then finds the first's
// answer in the store.
#pragma once

#include <condition_variable>
#include <set>
#include <mutex>
#include <string>

namespace cudal1 {

class KeyedMutex {
 public:
  // Held until destroyed or released. Movable, not copyable.
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& o) noexcept : owner_(o.owner_), key_(std::move(o.key_)) { o.owner_ = nullptr; }
    Guard& operator=(Guard&& o) noexcept;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { release(); }
    void release();
    bool held() const { return owner_ != nullptr; }

   private:
    friend class KeyedMutex;
    Guard(KeyedMutex* m, std::string key) : owner_(m), key_(std::move(key)) {}
    KeyedMutex* owner_ = nullptr;
    std::string key_;
  };

  // An empty guard when another holds `key` now.
  Guard try_lock(const std::string& key);
  // Blocks until `key` is free.
  Guard lock(const std::string& key);

 private:
  void unlock(const std::string& key);
  std::mutex m_;
  std::condition_variable cv_;
  std::set<std::string> held_;
};

}  // namespace cudal1

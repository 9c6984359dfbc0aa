#include "core/keyed_mutex.h"

namespace cudal1 {

KeyedMutex::Guard& KeyedMutex::Guard::operator=(Guard&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = o.owner_;
    key_ = std::move(o.key_);
    o.owner_ = nullptr;
  }
  return *this;
}

void KeyedMutex::Guard::release() {
  if (owner_) owner_->unlock(key_);
  owner_ = nullptr;
}

KeyedMutex::Guard KeyedMutex::try_lock(const std::string& key) {
  std::lock_guard<std::mutex> lk(m_);
  if (held_.count(key)) return {};
  held_.insert(key);
  return Guard(this, key);
}

KeyedMutex::Guard KeyedMutex::lock(const std::string& key) {
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait(lk, [&] { return !held_.count(key); });
  held_.insert(key);
  return Guard(this, key);
}

void KeyedMutex::unlock(const std::string& key) {
  {
    std::lock_guard<std::mutex> lk(m_);
    held_.erase(key);
  }
  cv_.notify_all();
}

}  // namespace cudal1

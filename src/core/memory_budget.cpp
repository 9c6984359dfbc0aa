#include "core/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace cudal1 {

MemoryBudget::MemoryBudget(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

MemoryBudget::Hold::Hold(Hold&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
  other.budget_ = nullptr;
  other.bytes_ = 0;
}

MemoryBudget::Hold& MemoryBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

MemoryBudget::Hold::~Hold() { release(); }

void MemoryBudget::Hold::resize(uint64_t bytes) {
  if (!budget_) return;
  budget_->change(bytes_, bytes);
  bytes_ = bytes;
}

void MemoryBudget::Hold::release() {
  if (budget_) budget_->change(bytes_, 0);
  budget_ = nullptr;
  bytes_ = 0;
}

MemoryBudget::Hold MemoryBudget::reserve(uint64_t bytes) {
  std::unique_lock<std::mutex> lock(m_);
  uint64_t ticket = next_ticket_++;
  cv_.wait(lock, [&] { return serving_ == ticket && (reserved_ == 0 || reserved_ + bytes <= capacity_); });
  ++serving_;
  reserved_ += bytes;
  cv_.notify_all();  // the next ticket may fit too
  Hold h;
  h.budget_ = this;
  h.bytes_ = bytes;
  return h;
}

void MemoryBudget::change(uint64_t from, uint64_t to) {
  {
    std::lock_guard<std::mutex> lock(m_);
    reserved_ = reserved_ - std::min(reserved_, from) + to;
  }
  if (to < from) cv_.notify_all();
}

uint64_t MemoryBudget::estimate(const std::string& task_hash, uint64_t first_guess) const {
  std::lock_guard<std::mutex> lock(m_);
  auto it = footprints_.find(task_hash);
  if (it != footprints_.end()) return it->second;
  return largest_ > 0 ? largest_ : first_guess;
}

void MemoryBudget::remember(const std::string& task_hash, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(m_);
  footprints_[task_hash] = bytes;
  largest_ = std::max(largest_, bytes);
}

uint64_t MemoryBudget::reserved() const {
  std::lock_guard<std::mutex> lock(m_);
  return reserved_;
}

std::optional<uint64_t> host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

uint64_t default_memory_budget() {
  std::optional<uint64_t> avail = host_memory_available();
  return avail ? *avail / 4 * 3 : uint64_t(8) << 30;
}

}  // namespace cudal1

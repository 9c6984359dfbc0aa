#include "core/device_gate.h"

namespace cudal1 {

DeviceGate::Hold& DeviceGate::Hold::operator=(Hold&& o) noexcept {
  if (this != &o) {
    release();
    gate_ = o.gate_, mode_ = o.mode_;
    o.gate_ = nullptr;
  }
  return *this;
}

void DeviceGate::Hold::release() {
  if (gate_) gate_->release(mode_);
  gate_ = nullptr;
}

void DeviceGate::Hold::downgrade() {
  if (!gate_ || mode_ == Mode::shared) return;
  gate_->downgrade();
  mode_ = Mode::shared;
}

bool DeviceGate::Hold::yield() {
  if (!gate_ || mode_ != Mode::shared || !gate_->exclusive_waiting()) return false;
  DeviceGate* g = gate_;
  release();
  *this = g->acquire(Mode::shared);
  return true;
}

bool DeviceGate::exclusive_waiting() {
  std::lock_guard<std::mutex> l(m_);
  return exclusive_waiting_ > 0;
}

void DeviceGate::downgrade() {
  {
    std::lock_guard<std::mutex> l(m_);
    exclusive_ = false;
    ++shared_;
  }
  cv_.notify_all();
}

DeviceGate::Hold DeviceGate::acquire(Mode mode) {
  std::unique_lock<std::mutex> l(m_);
  if (mode == Mode::exclusive) {
    ++exclusive_waiting_;
    cv_.wait(l, [&] { return !exclusive_ && shared_ == 0; });
    --exclusive_waiting_;
    exclusive_ = true;
  } else {
    cv_.wait(l, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
    ++shared_;
  }
  return Hold(this, mode);
}

void DeviceGate::release(Mode mode) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (mode == Mode::exclusive) exclusive_ = false;
    else --shared_;
  }
  cv_.notify_all();
}

}  // namespace cudal1

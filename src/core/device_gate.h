// core/device_gate: shared or exclusive use of one device by the evaluations that share it.
// Several queue lanes may run on one GPU: loading, checking and the precision ladder overlap
// (shared holds), while timing and baselines have the device to themselves
// (an exclusive hold waits for every shared hold to end, and keeps new ones out meanwhile).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace cudal1 {

class DeviceGate {
 public:
  enum class Mode { shared, exclusive };

  // Held until destroyed or released. Movable, not copyable.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& o) noexcept : gate_(o.gate_), mode_(o.mode_) { o.gate_ = nullptr; }
    Hold& operator=(Hold&& o) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }
    void release();
    // Exclusive to shared without letting go: no other exclusive hold starts in between.
    void downgrade();
    // A shared hold lets a waiting exclusive request go first: released, then taken again once
    // that request is done. Returns whether it waited. No-op for an exclusive hold.
    bool yield();
    bool held() const { return gate_ != nullptr; }
    Mode mode() const { return mode_; }

   private:
    friend class DeviceGate;
    Hold(DeviceGate* g, Mode m) : gate_(g), mode_(m) {}
    DeviceGate* gate_ = nullptr;
    Mode mode_ = Mode::shared;
  };

  // Blocks until the device can be used in `mode`. An exclusive request that is waiting goes
  // before shared requests that come after it, so timing is never starved by a stream of checks.
  Hold acquire(Mode mode);

 private:
  void release(Mode mode);
  void downgrade();
  bool exclusive_waiting();
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t shared_ = 0, exclusive_waiting_ = 0;
  bool exclusive_ = false;
};

}  // namespace cudal1

// core/timing_turn.h — one device's turn at timing, across every cudal1 process on the machine.
//
// The lanes of one cudal1 take turns through DeviceGate. Separate processes on one machine (two
// people's evals, the reward service beside a batch, test shards) know nothing of each other's
// gate, and a kernel of one running while another times is measured as the other's: on an H100
// shared by eight processes, honest candidates were rejected for clock disagreements and for
// "side-stream" work that was another process's. So timing also takes this turn: an flock(2) on
// a file per physical device, in a folder every user may write (TimingTurn::folder()).
//
// Timing alone is not enough: another process's correctness checks running kernels while one
// times are measured as the timer's too (seen on an H100 with eight processes: 2 honest
// candidates of 10 still rejected with a timing-only turn). So the turn is a readers-writer lock:
// checking stages take it shared (many at once), timing exclusive (flock's LOCK_SH and LOCK_EX).
// A second file, the turnstile, keeps a stream of checks from starving a timer: every taker
// passes through it, and a timer holds it while it waits for the checks under way to end.
//
// A turn waited for longer than its patience is gone without: timing goes on, and the caller
// says so in the result (the device was shared). A process that holds the file locked forever
// thus delays others by that patience at most.
#pragma once

#include <chrono>
#include <string>

namespace cudal1 {

class TimingTurn {
 public:
  enum class Kind { shared, exclusive };

  TimingTurn() = default;
  // Blocks until the device's turn is ours (with others' shared turns, for a shared one) or
  // `patience` has passed. `device`: "cuda", "cuda:N".
  static TimingTurn take(const std::string& device, std::chrono::milliseconds patience,
                         Kind kind = Kind::exclusive);
  ~TimingTurn();
  TimingTurn(TimingTurn&& other) noexcept;
  TimingTurn& operator=(TimingTurn&& other) noexcept;
  TimingTurn(const TimingTurn&) = delete;
  TimingTurn& operator=(const TimingTurn&) = delete;

  bool held() const { return fd_ >= 0; }
  bool exclusive() const { return held() && kind_ == Kind::exclusive; }
  double waited_s() const { return waited_s_; }
  void release();

  // $CUDAL1_TIMING_LOCKS, else /tmp/cudal1-timing (made 1777, as /tmp is).
  static std::string folder();
  // The file for a device: named after the physical GPU, so "cuda:0" under
  // CUDA_VISIBLE_DEVICES=2 and "cuda:2" without it share one.
  static std::string file_for(const std::string& device);

 private:
  int fd_ = -1;
  Kind kind_ = Kind::exclusive;
  double waited_s_ = 0;
};

}  // namespace cudal1

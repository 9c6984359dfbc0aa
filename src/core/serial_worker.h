// core/serial_worker: one background thread that runs the tasks posted to it, one after another
// in the order posted, so slow work (a judge's review) leaves the thread that found it free.
//
// Thread-safe. A task must not throw: one that does is said on stderr and the next runs.
// Destruction runs every task posted before it, then joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cudal1 {

class SerialWorker {
 public:
  explicit SerialWorker(const char* name);
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  void post(std::function<void()> task);
  std::size_t pending() const;  // posted and not finished yet, the running one included

 private:
  void run();

  const char* name_;  // for what is said on stderr
  mutable std::mutex m_;
  std::condition_variable posted_;
  std::deque<std::function<void()>> tasks_;  // guarded by m_, as is everything below
  bool running_task_ = false, stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace cudal1

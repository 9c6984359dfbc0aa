// core/memory_budget.h — host memory shared by evaluations that run side by side in one process.
//
// An evaluation holds, for as long as it runs, its inputs (files in /dev/shm, which is memory),
// every case's expected outputs (in the parent) and a few copies of one case's outputs:
// gigabytes for KernelBench's large tasks. Lanes that started evaluations without looking ran the
// 128 GB H200 machine out of memory (bench/NOTES.md, 2026-12-03 fourth session). So a lane
// reserves an evaluation's footprint before its reference runs and waits while the reservations
// would pass the budget. Waiters go in arrival order, so a large evaluation is not overtaken
// forever, and one evaluation always runs, whatever its size.
//
// Footprints are learnt: the evaluator measures one after its reference has run and remembers it
// per task; a task not seen yet is assumed as large as the largest seen so far.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace cudal1 {

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t capacity_bytes);

  // A reservation; released when destroyed.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept;
    Hold& operator=(Hold&& other) noexcept;
    ~Hold();
    // To the measured footprint: never waits (the memory is in use already); a smaller one
    // lets waiters in.
    void resize(uint64_t bytes);
    void release();
    uint64_t bytes() const { return bytes_; }

   private:
    friend class MemoryBudget;
    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // Blocks until `bytes` fit beside the other reservations (or none is held) and every earlier
  // caller has been served.
  Hold reserve(uint64_t bytes);

  // The footprint last remembered for `task_hash`; else the largest remembered for any task;
  // else `first_guess`.
  uint64_t estimate(const std::string& task_hash, uint64_t first_guess) const;
  void remember(const std::string& task_hash, uint64_t bytes);

  uint64_t capacity() const { return capacity_; }
  uint64_t reserved() const;

 private:
  void change(uint64_t from, uint64_t to);

  const uint64_t capacity_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  uint64_t reserved_ = 0;
  uint64_t next_ticket_ = 0, serving_ = 0;
  std::map<std::string, uint64_t> footprints_;
  uint64_t largest_ = 0;
};

// MemAvailable from /proc/meminfo, in bytes; nullopt where there is none.
std::optional<uint64_t> host_memory_available();

// A process's default budget: three quarters of the memory available now; 8 GiB where unknown.
uint64_t default_memory_budget();

}  // namespace cudal1

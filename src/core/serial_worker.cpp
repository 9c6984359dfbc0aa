// core/serial_worker.cpp — see serial_worker.h.
#include "core/serial_worker.h"

#include <cstdio>
#include <exception>

namespace cudal1 {

SerialWorker::SerialWorker(const char* name) : name_(name), thread_([this] { run(); }) {}

SerialWorker::~SerialWorker() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  posted_.notify_all();
  thread_.join();
}

void SerialWorker::post(std::function<void()> task) {
  {
    std::lock_guard lock(m_);
    tasks_.push_back(std::move(task));
  }
  posted_.notify_all();
}

std::size_t SerialWorker::pending() const {
  std::lock_guard lock(m_);
  return tasks_.size() + (running_task_ ? 1 : 0);
}

void SerialWorker::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(m_);
      running_task_ = false;
      posted_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything posted has run
      task = std::move(tasks_.front());
      tasks_.pop_front();
      running_task_ = true;
    }
    try {
      task();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudal1: %s: a task failed: %s\n", name_, e.what());
    } catch (...) {
      std::fprintf(stderr, "cudal1: %s: a task failed\n", name_);
    }
  }
}

}  // namespace cudal1

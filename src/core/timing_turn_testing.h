// core/timing_turn_testing.h — for tests only: waiting until another thread stands at a device's
// turnstile (core/timing_turn.h), so a test knows a timer is queued before it goes on.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/timing_turn.h"

namespace cudal1::test_support {

inline void wait_for_turnstile_holder(const std::string& device) {
  std::string file = TimingTurn::file_for(device);
  int fd = open((file.substr(0, file.size() - 5) + ".gate").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  ASSERT_GE(fd, 0);
  while (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close(fd);
}

}  // namespace cudal1::test_support

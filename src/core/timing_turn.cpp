#include "core/timing_turn.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "core/device.h"

namespace cudal1 {

std::string TimingTurn::folder() {
  const char* set = std::getenv("CUDAL1_TIMING_LOCKS");
  return set && *set ? set : "/tmp/cudal1-timing";
}

std::string TimingTurn::file_for(const std::string& device) {
  Device d = Device::parse(device);
  std::size_t index = std::size_t(d.index.value_or(0));
  std::string physical = std::to_string(index);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    std::vector<std::string> listed;
    std::string item;
    for (const char* c = visible;; ++c) {
      if (*c == ',' || *c == '\0') {
        listed.push_back(item);
        item.clear();
        if (*c == '\0') break;
      } else if (*c != ' ') {
        item += (*c == '/' ? '_' : *c);
      }
    }
    if (index < listed.size() && !listed[index].empty()) physical = listed[index];
  }
  return folder() + "/cuda-" + physical + ".lock";
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// flock(2) with `operation` | LOCK_NB, again and again with a growing pause, until it succeeds
// or `deadline` passes.
bool lock_until(int fd, int operation, SteadyClock::time_point deadline) {
  auto step = std::chrono::milliseconds(2);
  for (;;) {
    if (flock(fd, operation | LOCK_NB) == 0) return true;
    auto now = SteadyClock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(step, deadline - now));
    step = std::min(step * 2, std::chrono::milliseconds(50));
  }
}

int open_shared_file(const std::string& file) {
  int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd >= 0) fchmod(fd, 0666);  // every user's cudal1 takes turns on it
  return fd;
}

}  // namespace

TimingTurn TimingTurn::take(const std::string& device, std::chrono::milliseconds patience,
                            Kind kind) {
  TimingTurn turn;
  turn.kind_ = kind;
  std::string dir = folder();
  if (mkdir(dir.c_str(), 01777) == 0) chmod(dir.c_str(), 01777);  // past the umask
  std::string file = file_for(device);
  auto start = SteadyClock::now(), deadline = start + patience;
  int fd = open_shared_file(file);
  // The turnstile: ".gate" beside the device's file. Held only while waiting for the device's.
  int gate = open_shared_file(file.substr(0, file.size() - 5) + ".gate");
  if (fd >= 0 && gate >= 0 && lock_until(gate, LOCK_EX, deadline) &&
      lock_until(fd, kind == Kind::exclusive ? LOCK_EX : LOCK_SH, deadline)) {
    turn.fd_ = fd;
    fd = -1;
  }
  if (fd >= 0) close(fd);  // no turn to take, or none in time: timing goes on without
  if (gate >= 0) close(gate);  // closing drops its lock
  turn.waited_s_ = std::chrono::duration<double>(SteadyClock::now() - start).count();
  return turn;
}

void TimingTurn::release() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor of the open file drops the lock
  fd_ = -1;
}

TimingTurn::~TimingTurn() { release(); }

TimingTurn::TimingTurn(TimingTurn&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), kind_(other.kind_), waited_s_(other.waited_s_) {}

TimingTurn& TimingTurn::operator=(TimingTurn&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    kind_ = other.kind_;
    waited_s_ = other.waited_s_;
  }
  return *this;
}

}  // namespace cudal1

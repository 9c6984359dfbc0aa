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

TimingTurn TimingTurn::take(const std::string& device, std::chrono::milliseconds patience) {
  TimingTurn turn;
  std::string dir = folder();
  if (mkdir(dir.c_str(), 01777) == 0) chmod(dir.c_str(), 01777);  // past the umask
  std::string file = file_for(device);
  int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return turn;  // no turn to take: timing goes on, as after a lost wait
  fchmod(fd, 0666);          // every user's cudal1 takes turns on it
  auto start = std::chrono::steady_clock::now();
  auto step = std::chrono::milliseconds(2);
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      turn.fd_ = fd;
      break;
    }
    auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= patience) {
      close(fd);
      break;
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(step, patience - waited));
    step = std::min(step * 2, std::chrono::milliseconds(50));
  }
  turn.waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return turn;
}

void TimingTurn::release() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor of the open file drops the lock
  fd_ = -1;
}

TimingTurn::~TimingTurn() { release(); }

TimingTurn::TimingTurn(TimingTurn&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), waited_s_(other.waited_s_) {}

TimingTurn& TimingTurn::operator=(TimingTurn&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    waited_s_ = other.waited_s_;
  }
  return *this;
}

}  // namespace cudal1

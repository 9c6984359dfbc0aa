#include "core/device_gate.h"

#include <signal.h>

#include "core/process_tree.h"

namespace cudal1 {

DeviceGate::Hold& DeviceGate::Hold::operator=(Hold&& o) noexcept {
  if (this != &o) {
    release();
    gate_ = o.gate_;
    mode_ = o.mode_;
    member_ = o.member_;
    o.gate_ = nullptr;
  }
  return *this;
}

void DeviceGate::Hold::release() {
  if (gate_) gate_->release(mode_, member_);
  gate_ = nullptr;
}

void DeviceGate::Hold::downgrade() {
  if (!gate_ || mode_ == Mode::shared) return;
  gate_->downgrade(member_);
  mode_ = Mode::shared;
}

bool DeviceGate::Hold::yield() {
  if (!gate_ || mode_ != Mode::shared || !gate_->exclusive_waiting()) return false;
  DeviceGate* g = gate_;
  Member* m = member_;
  release();
  *this = g->acquire(Mode::shared, m);
  return true;
}

DeviceGate::Member::~Member() {
  std::lock_guard<std::mutex> l(gate_->m_);
  if (frozen_) thaw();
  gate_->frozen_.erase(this);
  gate_->holders_.erase(this);
}

void DeviceGate::Member::freeze() {
  signal_groups(groups_, SIGSTOP);
  frozen_ = true;
  frozen_since_ = std::chrono::steady_clock::now();
}

void DeviceGate::Member::thaw() {
  signal_groups(groups_, SIGCONT);
  frozen_ = false;
  frozen_total_ += std::chrono::steady_clock::now() - frozen_since_;
}

std::chrono::nanoseconds DeviceGate::Member::frozen_for() const {
  std::lock_guard<std::mutex> l(gate_->m_);
  return frozen_total_ + (frozen_ ? std::chrono::steady_clock::now() - frozen_since_ : std::chrono::nanoseconds(0));
}

void DeviceGate::Member::track(pid_t group) {
  std::lock_guard<std::mutex> l(gate_->m_);
  groups_.insert(group);
  if (frozen_) signal_groups({group}, SIGSTOP);
}

void DeviceGate::Member::untrack(pid_t group) {
  std::lock_guard<std::mutex> l(gate_->m_);
  if (frozen_) signal_groups({group}, SIGCONT);  // a stopped process cannot die of its own kill
  groups_.erase(group);
}

void DeviceGate::Member::set_freezable(bool freezable) {
  {
    std::unique_lock<std::mutex> l(gate_->m_);
    gate_->cv_.wait(l, [&] { return !frozen_; });
    freezable_ = freezable;
  }
  gate_->cv_.notify_all();
}

namespace {
thread_local DeviceGate::Member* tls_member = nullptr;
}

DeviceGate::Member* DeviceGate::Member::current() { return tls_member; }

DeviceGate::Member::Scope::Scope(Member* m) : previous_(tls_member) { tls_member = m; }

DeviceGate::Member::Scope::~Scope() { tls_member = previous_; }

void DeviceGate::signal_groups(const std::set<pid_t>& groups, int sig) {
  // The group, and the whole tree under its leader: a sandboxed worker's processes may have
  // left the group, never the tree (core/process_tree.h). A group that is gone: ESRCH, nothing to do.
  for (pid_t g : groups) {
    ::kill(-g, sig);
    if (sig == SIGSTOP) stop_tree(g);
    else if (sig == SIGCONT) continue_tree(g);
  }
}

bool DeviceGate::exclusive_waiting() {
  std::lock_guard<std::mutex> l(m_);
  return exclusive_waiting_ > 0;
}

bool DeviceGate::shared_in_the_way() const {
  if (!freeze_) return shared_ > 0;
  if (unfrozen_shared_ > 0) return true;
  for (auto& [member, count] : holders_)
    if (!member->freezable_) return true;
  return false;
}

void DeviceGate::end_exclusive() {
  exclusive_ = false;
  for (Member* m : frozen_) m->thaw();
  frozen_.clear();
}

void DeviceGate::add_shared(Member* member) {
  ++shared_;
  if (freeze_ && member) ++holders_[member];
  else ++unfrozen_shared_;
}

void DeviceGate::downgrade(Member* member) {
  {
    std::lock_guard<std::mutex> l(m_);
    end_exclusive();
    add_shared(member);
  }
  cv_.notify_all();
}

DeviceGate::Hold DeviceGate::acquire(Mode mode, Member* member) {
  std::unique_lock<std::mutex> l(m_);
  if (mode == Mode::exclusive) {
    ++exclusive_waiting_;
    cv_.wait(l, [&] { return !exclusive_ && !shared_in_the_way(); });
    --exclusive_waiting_;
    exclusive_ = true;
    for (auto& [m, count] : holders_)
      if (m != member) {
        m->freeze();
        frozen_.insert(m);
      }
  } else {
    cv_.wait(l, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
    add_shared(member);
  }
  return Hold(this, mode, member);
}

void DeviceGate::release(Mode mode, Member* member) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (mode == Mode::exclusive) {
      end_exclusive();
    } else {
      --shared_;
      if (freeze_ && member) {
        if (--holders_[member] == 0) holders_.erase(member);
      } else {
        --unfrozen_shared_;
      }
    }
  }
  cv_.notify_all();
}

}  // namespace cudal1

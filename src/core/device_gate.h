// core/device_gate: shared or exclusive use of one device by the evaluations that share it.
// Several queue lanes may run on one GPU: loading, checking and the precision ladder overlap
// (shared holds), while timing and baselines have the device to themselves
// (an exclusive hold waits for every shared hold to end, and keeps new ones out meanwhile).
//
// Freezing (DeviceGate(true)): an evaluation's shared holds name its Member, the process groups
// working for it. An exclusive request then waits only for holds without a member or whose member
// is not freezable now; the others' processes are stopped (SIGSTOP to each group and process tree) while the
// exclusive hold lasts and continued after (SIGCONT). A shared stage that lasts long on the CPU
// (a torch.compile, a lint) no longer keeps every lane from timing until it ends.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace cudal1 {

class DeviceGate {
 public:
  enum class Mode { shared, exclusive };

  explicit DeviceGate(bool freeze_shared = false) : freeze_(freeze_shared) {}
  bool freezes() const { return freeze_; }

  // The processes one evaluation runs (its workers' process groups). Created per evaluation;
  // a process is tracked while it lives. Thread-safe.
  class Member {
   public:
    explicit Member(DeviceGate* gate) : gate_(gate) {}
    ~Member();                  // continues its processes if it is frozen now
    Member(const Member&) = delete;
    Member& operator=(const Member&) = delete;
    void track(pid_t group);    // stopped at once when the member is frozen now
    void untrack(pid_t group);
    // How long its processes have been stopped in all, the current stop included.
    std::chrono::nanoseconds frozen_for() const;
    // Not freezable: an exclusive request waits for this member's shared hold to end, as without
    // freezing (a stage that measures time passing in its processes). Blocks while frozen.
    void set_freezable(bool freezable);

    // The member that workers started on this thread join (an evaluation sets it while it runs).
    static Member* current();
    class Scope {
     public:
      explicit Scope(Member* m);
      ~Scope();
      Scope(const Scope&) = delete;
      Scope& operator=(const Scope&) = delete;

     private:
      Member* previous_;
    };

   private:
    friend class DeviceGate;
    DeviceGate* gate_;
    std::set<pid_t> groups_;  // under gate_->m_, as is everything below
    bool freezable_ = true, frozen_ = false;
    std::chrono::steady_clock::time_point frozen_since_;
    std::chrono::nanoseconds frozen_total_{0};
    void freeze();
    void thaw();
  };

  // Held until destroyed or released. Movable, not copyable.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& o) noexcept : gate_(o.gate_), mode_(o.mode_), member_(o.member_) { o.gate_ = nullptr; }
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
    Hold(DeviceGate* g, Mode m, Member* member) : gate_(g), mode_(m), member_(member) {}
    DeviceGate* gate_ = nullptr;
    Mode mode_ = Mode::shared;
    Member* member_ = nullptr;
  };

  // Blocks until the device can be used in `mode`. An exclusive request that is waiting goes
  // before shared requests that come after it, so timing is never starved by a stream of checks.
  // `member`: whose shared hold this is (see freezing above); it must outlive the hold.
  Hold acquire(Mode mode, Member* member = nullptr);

 private:
  void release(Mode mode, Member* member);
  void downgrade(Member* member);
  // Under m_: the exclusive hold ends and the members it stopped continue; a shared hold counts.
  void end_exclusive();
  void add_shared(Member* member);
  bool exclusive_waiting();
  // Shared holds an exclusive request must wait for: all of them, or with freezing those whose
  // member is missing or not freezable.
  bool shared_in_the_way() const;
  static void signal_groups(const std::set<pid_t>& groups, int sig);
  const bool freeze_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::size_t shared_ = 0, exclusive_waiting_ = 0;
  std::size_t unfrozen_shared_ = 0;       // shared holds without a member
  std::map<Member*, std::size_t> holders_;  // members holding shared, with their hold count
  std::set<Member*> frozen_;              // stopped by the exclusive hold now
  bool exclusive_ = false;
};

}  // namespace cudal1

// sandbox/mount_plan.h — the bwrap mount options that give a sandbox its view of the filesystem.
//
// Everything is read-only; hidden folders become empty read-only tmpfs, hidden files read as
// empty; each exposed path is bound back at its own path, read-only or writable. When the
// sandbox runs as another uid, a folder on the way to an exposed path that this uid could not
// enter (a home folder of mode 0700) is hidden too, so the path can be bound back through
// folders the sandbox may walk: nothing else of that folder shows.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cudal1 {

struct MountPlan {
  struct Exposed {
    std::string path;
    bool writable = false;
  };
  std::vector<std::string> hidden;  // absolute; files or folders (missing ones are skipped)
  std::vector<Exposed> exposed;     // absolute; missing ones are skipped
  // Whether the sandbox's uid may enter a folder; empty: it may enter any.
  std::function<bool(const std::string&)> can_enter;
};

// bwrap's options for the plan, after `--ro-bind / /`, `--dev` and `--proc`: tmpfs and binds
// ordered so that each lands on what it should (shallower paths first), then each tmpfs made
// read-only.
std::vector<std::string> mount_options(const MountPlan& plan);

// Whether `uid` (with group `gid`, no supplementary groups) may search folder `path` by its
// mode bits alone.
bool uid_may_enter(const std::string& path, unsigned uid, unsigned gid);

}  // namespace cudal1

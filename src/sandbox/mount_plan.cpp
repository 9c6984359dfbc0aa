#include "sandbox/mount_plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace cudal1 {

namespace fs = std::filesystem;

namespace {

// The real path (symlinks resolved), or "" when nothing is there: bwrap binds the real thing,
// and a path through a link still reaches it because the link itself stays visible.
std::string real_path(const std::string& p) {
  std::error_code ec;
  if (p.empty() || !fs::exists(p, ec)) return {};
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? std::string() : c.string();
}

bool is_under(const std::string& path, const std::string& folder) {
  if (folder == "/") return true;
  return path == folder || (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
                            path[folder.size()] == '/');
}

std::size_t depth(const std::string& p) { return p == "/" ? 0 : std::count(p.begin(), p.end(), '/'); }

}  // namespace

bool uid_may_enter(const std::string& path, unsigned uid, unsigned gid) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid == uid) return st.st_mode & S_IXUSR;
  if (st.st_gid == gid) return st.st_mode & S_IXGRP;
  return st.st_mode & S_IXOTH;
}

std::vector<std::string> mount_options(const MountPlan& plan) {
  std::set<std::string> hidden;
  for (auto& h : plan.hidden)
    if (auto r = real_path(h); !r.empty() && r != "/") hidden.insert(r);
  std::vector<MountPlan::Exposed> exposed;
  for (auto& e : plan.exposed)
    if (auto r = real_path(e.path); !r.empty()) exposed.push_back({r, e.writable});
  // A folder the uid could not walk through on the way to an exposed path is hidden, and the
  // path bound back through the tmpfs that replaces it. Always its own tmpfs, even inside another
  // one: bwrap makes the folders on the way to a bind with the modes of the originals.
  std::set<std::string> walls;
  if (plan.can_enter)
    for (auto& e : exposed)
      for (fs::path a = fs::path(e.path).parent_path(); a != a.root_path() && !a.empty(); a = a.parent_path())
        if (!plan.can_enter(a.string())) walls.insert(a.string());
  for (auto& w : walls) hidden.insert(w);

  auto covered = [&](const std::string& p) {
    for (auto& h : hidden)
      if (h != p && is_under(p, h)) return true;
    return false;
  };
  auto inside_exposed = [&](const std::string& p) {
    for (auto& e : exposed)
      if (e.path != p && is_under(p, e.path)) return true;
    return false;
  };
  // (depth, hide before bind, path, is hide, writable)
  std::vector<std::tuple<std::size_t, int, std::string, bool, bool>> steps;
  for (auto& h : hidden)
    if (!covered(h) || inside_exposed(h) || walls.count(h)) steps.emplace_back(depth(h), 0, h, true, false);
  std::set<std::string> bound;
  for (auto& e : exposed) {
    bool writable = e.writable;
    for (auto& other : exposed)
      if (other.path == e.path) writable |= other.writable;
    if (!bound.insert(e.path).second) continue;
    // Visible anyway, and read-only is all it needs.
    if (!writable && !covered(e.path) && !hidden.count(e.path)) continue;
    steps.emplace_back(depth(e.path), 1, e.path, false, writable);
  }
  std::sort(steps.begin(), steps.end());
  std::vector<std::string> args, tmpfs;
  std::map<std::string, bool> mounted;  // path -> whether a tmpfs (else a bind of the real thing)
  std::set<std::string> made;
  // bwrap makes the folders on the way to a mount point inside a tmpfs with mode 0700, which a
  // switched uid cannot walk through: they are made first, open to all (they hold nothing).
  auto make_way = [&](const std::string& path) {
    std::string deepest;
    for (auto& [m, is_tmpfs] : mounted)
      if (m != path && is_under(path, m) && m.size() > deepest.size()) deepest = m;
    if (deepest.empty() || !mounted[deepest]) return;
    std::vector<std::string> way;
    for (fs::path a = fs::path(path).parent_path(); a.string().size() > deepest.size(); a = a.parent_path())
      way.push_back(a.string());
    for (auto it = way.rbegin(); it != way.rend(); ++it)
      if (made.insert(*it).second) args.insert(args.end(), {"--perms", "0755", "--dir", *it});
  };
  for (auto& [d, order, path, hide, writable] : steps) {
    std::error_code ec;
    make_way(path);
    mounted[path] = hide && fs::is_directory(path, ec);
    if (hide && fs::is_directory(path, ec)) {
      args.insert(args.end(), {"--tmpfs", path});
      tmpfs.push_back(path);
    } else if (hide) {
      args.insert(args.end(), {"--ro-bind", "/dev/null", path});
    } else {
      args.insert(args.end(), {writable ? "--bind" : "--ro-bind", path, path});
    }
  }
  for (auto& t : tmpfs) args.insert(args.end(), {"--remount-ro", t});
  return args;
}

}  // namespace cudal1

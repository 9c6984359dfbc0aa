#include "core/paths.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"

namespace fs = std::filesystem;

namespace cudal1 {

static bool has_worker(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "cudal1_worker.py", ec);
}

fs::path python_worker_dir() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("CUDAL1_PY_DIR")) {
    if (has_worker(env)) return env;
    tried.emplace_back(env);
  }
  fs::path source = CUDAL1_SOURCE_PY_DIR;
  if (has_worker(source)) return source;
  tried.push_back(source);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "cudal1" / "py";
    if (has_worker(installed)) return installed;
    tried.push_back(installed);
  }
  std::string list;
  for (auto& t : tried) list += " " + t.string();
  throw Error(ErrorKind::runner, "cannot find the Python worker scripts (cudal1_worker.py)",
              "set CUDAL1_PY_DIR to the folder src/runner/py of a cudal1 checkout",
              "tried:" + list);
}

fs::path default_store_path() {
  if (const char* env = std::getenv("CUDAL1_DB")) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return fs::path(xdg) / "cudal1" / "results.db";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "cudal1" / "results.db";
}

fs::path extension_cache_dir() {
  if (const char* env = std::getenv("CUDAL1_CACHE")) return fs::path(env) / "torch_extensions";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return fs::path(xdg) / "cudal1" / "torch_extensions";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "cudal1" / "torch_extensions";
}

unsigned private_dir_mode() { return geteuid() == 0 ? 0711 : 0700; }

fs::path make_private_dir(const char* prefix, const fs::path& parent) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = !parent.empty() ? parent.string() : std::string(tmp && *tmp ? tmp : "/tmp");
  std::string templ = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw Error(ErrorKind::runner, "cannot create a temporary directory " + templ,
                "check that $TMPDIR (or /tmp) exists and is writable");
  chmod(buf.data(), private_dir_mode());
  return fs::path(buf.data());
}

fs::path scratch_parent() {
  if (const char* env = std::getenv("CUDAL1_SCRATCH"); env && *env) {
    fs::create_directories(env);
    return env;
  }
  struct statvfs st {};
  if (statvfs("/dev/shm", &st) == 0 && double(st.f_bavail) * double(st.f_frsize) >= 8.0 * (1ull << 30) &&
      access("/dev/shm", W_OK) == 0) {
    fs::path p = fs::path("/dev/shm") / ("cudal1-" + std::to_string(getuid()));
    std::error_code ec;
    fs::create_directories(p, ec);
    if (!ec) {
      chmod(p.c_str(), private_dir_mode());
      return p;
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t end = std::min(dirs.find(':', at), dirs.size());
    fs::path p = fs::path(end > at ? dirs.substr(at, end - at) : ".") / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    at = end + 1;
  }
  return "";
}

}  // namespace cudal1

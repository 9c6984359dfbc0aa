// store/sqlite_guard.h — SQLite failures as cudal1 errors: every SQLite file cudal1 keeps (the
// results store, the service's jobs) turns a library exception into Error(store) saying what
// was being done, which file, and what the person can do.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <string>

#include "core/error.h"

namespace cudal1 {

// Runs f(); a SQLite::Exception becomes Error(store, "<what> failed: ...", hint, path).
template <typename F>
auto sqlite_guarded(const std::filesystem::path& path, const char* what, const std::string& hint, F&& f) {
  try {
    return f();
  } catch (const SQLite::Exception& e) {
    throw Error(ErrorKind::store, std::string(what) + " failed: " + e.what(), hint, path.string());
  }
}

}  // namespace cudal1

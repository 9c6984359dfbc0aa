// core/paths.h — where cudal1 finds its Python worker scripts, the programs it runs, and keeps its
// default store.
#pragma once

#include <filesystem>
#include <string>

namespace cudal1 {

// $CUDAL1_PY_DIR, else the source tree's src/runner/py (the build embeds its path), else
// <exe dir>/../share/cudal1/py. Throws Error(runner) naming what it tried.
std::filesystem::path python_worker_dir();

// The first executable `name` in $PATH's folders (an empty entry is the current folder; no PATH:
// /usr/bin:/bin), or "".
std::string find_on_path(const std::string& name);

// $CUDAL1_DB, else $XDG_CACHE_HOME/cudal1/results.db, else ~/.cache/cudal1/results.db.
std::filesystem::path default_store_path();

// $CUDAL1_CACHE/torch_extensions, else ~/.cache/cudal1/torch_extensions.
std::filesystem::path extension_cache_dir();

// The mode of cudal1's private folders: 0700, or 0711 when cudal1 runs as root, so that a
// sandbox's own uid may pass through to the one folder it is given (it cannot list them).
unsigned private_dir_mode();

// A fresh private directory (mode private_dir_mode()) under `parent` (default $TMPDIR, else /tmp).
std::filesystem::path make_private_dir(const char* prefix, const std::filesystem::path& parent = {});

// Where evaluations keep inputs and outputs while they run: $CUDAL1_SCRATCH, else a folder in
// /dev/shm when it has room (8 GiB free; outputs of large tasks are gigabytes, written and read
// back several times, and memory is much faster than disk for that), else $TMPDIR.
std::filesystem::path scratch_parent();

}  // namespace cudal1

#include "evaluator/extension_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace cudal1 {

namespace {

// Removes <folder>/<entry>/lock for each sub-folder. Entries are opened relative to descriptors
// and never followed through a link: the folder was written by candidate code, which may have
// planted a link to somewhere else.
int remove_build_locks(const std::filesystem::path& folder) {
  int dir = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return 0;
  DIR* listing = fdopendir(dup(dir));
  int removed = 0;
  if (listing) {
    while (dirent* e = readdir(listing)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) continue;
      if (unlinkat(sub, "lock", 0) == 0) ++removed;  // a folder named lock stays (EISDIR)
      close(sub);
    }
    closedir(listing);
  }
  close(dir);
  return removed;
}

}  // namespace

ExtensionFolderClaim::ExtensionFolderClaim(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  std::string users = folder.string() + ".users";
  fd_ = ec ? -1 : open(users.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0)
    throw Error(ErrorKind::runner,
                "cannot prepare the extension build folder " + folder.string() + ": " +
                    (ec ? ec.message() : std::string(strerror(errno))),
                "set CUDAL1_CACHE to a writable folder, or evaluate with builds not kept");
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    removed_ = remove_build_locks(folder);
    flock(fd_, LOCK_SH);  // from sole holder to one of many; no build has started meanwhile
    return;
  }
  while (flock(fd_, LOCK_SH) != 0 && errno == EINTR) {
  }
}

ExtensionFolderClaim::~ExtensionFolderClaim() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor ends the claim
}

ExtensionFolderClaim::ExtensionFolderClaim(ExtensionFolderClaim&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), removed_(other.removed_) {}

ExtensionFolderClaim& ExtensionFolderClaim::operator=(ExtensionFolderClaim&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    removed_ = other.removed_;
  }
  return *this;
}

}  // namespace cudal1
